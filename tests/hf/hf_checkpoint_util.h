// Helpers of the Hugging Face checkpoint tests (hf_checkpoint_test.cpp: folders and their files;
// hf_weights_test.cpp: weights, configs and the CLI): an exported checkpoint folder to edit, and its
// session, template and load error.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "../golden/golden_pack.h"
#include "cli_runner.h"
#include "glia/session.h"
#include "gguf/hf_keys.h"
#include "hf_export.h"
#include "model/model.h"
#include "model/hf/hf_checkpoint.h"
#include "model/model_file.h"
#include "model/profile.h"
#include "model/rope_rows.h"
#include "tokenizer/jinja/chat_template.h"
#include "safetensors/safetensors.h"
#include "tokenizer/tokenizer.h"

namespace glia {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// llama-untied-F16 (32000 tokens, the Llama 2 vocabulary size) with Mistral-7B's tokenizer files.
inline std::string llama_dir(const std::string& name) {
  const std::string dir = test::scratch("hf_checkpoint/" + name);
  test::hf_export_options o;
  o.tokenizer_dir = test::testdata("tokenizers/llama2");
  status s = test::export_hf_checkpoint(test::testdata("models/llama-untied-F16.gguf"), dir, o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return dir;
}

inline json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

inline void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// Rewrites model.safetensors through `edit`, which may drop or add tensors.
inline void rewrite_weights(const std::string& dir, const std::function<void(const safetensors::file&, safetensors::writer&)>& edit) {
  const std::string path = dir + "/model.safetensors";
  safetensors::writer w;
  {
    auto f = safetensors::file::open(path);
    ASSERT_TRUE(f.is_ok()) << f.message();
    edit(**f, w);
  }
  ASSERT_TRUE(w.write(path).is_ok());
}

inline void copy_all_but(const safetensors::file& f, safetensors::writer& w, std::string_view skip) {
  for (const auto& t : f.tensors()) {
    if (t.name == skip) continue;
    ASSERT_TRUE(w.add(t.name, t.type, t.shape, {t.data, size_t(t.n_bytes)}).is_ok());
  }
}

inline std::string load_error(const std::string& dir) {
  auto m = load_model(dir);
  EXPECT_FALSE(m.is_ok());
  return m.is_ok() ? std::string() : m.message();
}

inline std::unique_ptr<session> open_session(const std::string& path, bool use_mmap = true) {
  session_options so;
  so.model_path = path;
  so.n_ctx = 64;
  so.use_mmap = use_mmap;
  auto s = session::create(so);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? std::move(*s) : nullptr;
}

// The folder's own chat template (not a fallback) rendered for `messages`, with the generation prompt.
inline std::string render_default(const std::string& dir, const std::string& messages) {
  auto sess = open_session(dir);
  if (!sess) return "(no session)";
  auto format = sess->chat_template("");
  EXPECT_TRUE(format.is_ok()) << format.message();
  if (!format.is_ok()) return "(no template)";
  EXPECT_FALSE(format->fell_back);
  auto r = sess->render_chat(*format, messages, true);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return r.is_ok() ? *r : "(render failed)";
}

}  // namespace
}  // namespace glia
