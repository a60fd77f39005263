#include "fixtures.h"

#include <array>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "gguf/gguf.h"

namespace glia::fuzz {
namespace {

std::unique_ptr<tokenizer> load_gguf_bytes(std::span<const uint8_t> bytes, const std::string& what) {
  auto f = gguf::file::from_memory(bytes);
  if (!f) setup_failed(what + ": " + f.message());
  auto tok = tokenizer::from_gguf(**f);
  if (!tok) setup_failed(what + ": " + tok.message());
  return std::move(*tok);  // the tokenizer copies what it needs; the file can go
}

std::unique_ptr<tokenizer> load_gguf(const std::string& rel) {
  const std::string path = testdata(rel);
  auto f = gguf::file::open(path);
  if (!f) setup_failed(f.message());
  auto tok = tokenizer::from_gguf(**f);
  if (!tok) setup_failed(path + ": " + tok.message());
  return std::move(*tok);
}

// The pack keeps llama.cpp's vocab-only GGUFs xz-compressed; xz(1) is a setup.sh dependency, so a
// pipe from it avoids linking liblzma into every target.
std::unique_ptr<tokenizer> load_gguf_xz(const std::string& rel) {
  const std::string path = testdata(rel);
  const std::string cmd = "xz -dc '" + path + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) setup_failed("cannot run " + cmd);
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) bytes.insert(bytes.end(), buf, buf + n);
  if (::pclose(p) != 0 || bytes.empty()) setup_failed("cannot decompress " + path);
  return load_gguf_bytes(bytes, path);
}

std::unique_ptr<tokenizer> load_hf(const std::string& rel) {
  auto tok = tokenizer::from_hf(testdata(rel));
  if (!tok) setup_failed(rel + ": " + tok.message());
  return std::move(*tok);
}

struct kind_row {
  std::string_view name;
  bool hf;
  std::unique_ptr<tokenizer> (*load)();
};

const std::array<kind_row, 6> kinds = {{
    {"brown", false, [] { return load_gguf("models/brown-f32.gguf"); }},
    {"llama2-hf", true, [] { return load_hf("tokenizers/llama2"); }},
    {"llama3-hf", true, [] { return load_hf("tokenizers/llama3"); }},
    {"qwen3-hf", true, [] { return load_hf("tokenizers/qwen3"); }},
    {"gpt2-gguf", false, [] { return load_gguf_xz("tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf.xz"); }},
    {"deepseek-llm", false, [] { return load_gguf_xz("tokenizers/llama.cpp-vocab/ggml-vocab-deepseek-llm.gguf.xz"); }},
}};

}  // namespace

const tokenizer& brown_tokenizer() { return tokenizer_of_kind(0); }

int n_tokenizer_kinds() { return int(kinds.size()); }
std::string_view tokenizer_kind_name(int kind) { return kinds.at(kind).name; }
bool tokenizer_kind_is_hf(int kind) { return kinds.at(kind).hf; }

const tokenizer& tokenizer_of_kind(int kind) {
  // Loaded lazily, once per kind: a run that only meets one kind pays for one.
  static std::array<std::unique_ptr<tokenizer>, kinds.size()> loaded;
  static std::array<std::once_flag, kinds.size()> once;
  const kind_row& row = kinds.at(kind);
  std::call_once(once[kind], [&] { loaded[kind] = row.load(); });
  return *loaded[kind];
}

}  // namespace glia::fuzz
