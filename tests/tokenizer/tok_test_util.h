// Helpers for the tokenizer tests: loading tokenizers from pack files and reading the pack's
// llama.cpp vocab test cases and JSON-lines goldens.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace glia::test {

// Loads the tokenizer of a GGUF file (absolute path); fails the test with the error otherwise.
inline std::unique_ptr<tokenizer> load_tokenizer(const std::string& path) {
  auto f = gguf::file::open(path);
  EXPECT_TRUE(f.is_ok()) << path << ": " << f.message();
  if (!f) return nullptr;
  auto t = tokenizer::from_gguf(**f);
  EXPECT_TRUE(t.is_ok()) << path << ": " << t.message();
  if (!t) return nullptr;
  return std::move(t).value();
}

// One of the pack's Hugging Face tokenizers (tokenizers/<name>), loaded once per test program and shared
// by the tests that use it (gemma3's tokenizer.json is 33 MB). nullptr (and a test failure) if it fails.
inline const tokenizer* hf_pack_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  auto t = tokenizer::from_hf(testdata("tokenizers/" + name));
  EXPECT_TRUE(t.is_ok()) << name << ": " << t.message();
  std::unique_ptr<tokenizer> tok;
  if (t) tok = std::move(t).value();
  return cache.emplace(name, std::move(tok)).first->second.get();
}

inline std::unique_ptr<tokenizer> load_vocab_gguf(const std::string& name) {
  return load_tokenizer(decompressed("tokenizers/llama.cpp-vocab/ggml-vocab-" + name + ".gguf.xz"));
}

struct vocab_case {
  std::string text;
  std::vector<int32_t> ids;
};

// The .inp/.out pair of a llama.cpp vocab test (format: tokenizers/llama.cpp-vocab/README.md).
inline std::vector<vocab_case> read_vocab_cases(const std::string& name) {
  const std::string base = testdata("tokenizers/llama.cpp-vocab/ggml-vocab-" + name + ".gguf");
  const std::string inp = read_text(base + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<vocab_case> cases;
  for (size_t pos = 0; pos < inp.size();) {
    size_t end = inp.find(sep, pos);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + sep.size();
  }
  std::istringstream out(read_text(base + ".out"));
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(out, line)) break;
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
  }
  return cases;
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> rows;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  s += ']';
  return s;
}

template <typename... Parts>
std::vector<int32_t> concat(const Parts&... parts) {
  std::vector<int32_t> out;
  (out.insert(out.end(), parts.begin(), parts.end()), ...);
  return out;
}

}  // namespace glia::test
