// Hugging Face checkpoint folders as a user has them: the tokenizer and chat template come along, the
// CLI takes the folder wherever it takes a model, and a folder that is not a usable checkpoint is
// refused with a message that names the file and the key or tensor at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../golden/golden_pack.h"
#include "cli_runner.h"
#include "glia/session.h"
#include "hf_export.h"
#include "model/model.h"
#include "safetensors/safetensors.h"
#include "tokenizer/tokenizer.h"

namespace glia {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// llama-untied-F16 (32000 tokens, the Llama 2 vocabulary size) with Mistral-7B's tokenizer files.
std::string llama_dir(const std::string& name) {
  const std::string dir = test::scratch("hf_checkpoint/" + name);
  test::hf_export_options o;
  o.tokenizer_dir = test::testdata("tokenizers/llama2");
  status s = test::export_hf_checkpoint(test::testdata("models/llama-untied-F16.gguf"), dir, o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return dir;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// Rewrites model.safetensors through `edit`, which may drop or add tensors.
void rewrite_weights(const std::string& dir, const std::function<void(const safetensors::file&, safetensors::writer&)>& edit) {
  const std::string path = dir + "/model.safetensors";
  safetensors::writer w;
  {
    auto f = safetensors::file::open(path);
    ASSERT_TRUE(f.is_ok()) << f.message();
    edit(**f, w);
  }
  ASSERT_TRUE(w.write(path).is_ok());
}

void copy_all_but(const safetensors::file& f, safetensors::writer& w, std::string_view skip) {
  for (const auto& t : f.tensors()) {
    if (t.name == skip) continue;
    ASSERT_TRUE(w.add(t.name, t.type, t.shape, {t.data, size_t(t.n_bytes)}).is_ok());
  }
}

std::string load_error(const std::string& dir) {
  auto m = load_model(dir);
  EXPECT_FALSE(m.is_ok());
  return m.is_ok() ? std::string() : m.message();
}

TEST(hf_checkpoint, tokenizer_and_chat_template_come_from_the_folder) {
  const std::string dir = llama_dir("tokenizer");
  json config = read_json(dir + "/tokenizer_config.json");
  config["chat_template"] = "{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}";
  write_text(dir + "/tokenizer_config.json", config.dump());
  session_options so;
  so.model_path = dir;
  so.n_threads = 2;
  so.n_ctx = 256;
  auto sess = session::create(so);
  ASSERT_TRUE(sess.is_ok()) << sess.message();
  auto reference = tokenizer::from_hf(dir);
  ASSERT_TRUE(reference.is_ok()) << reference.message();
  const std::string text = "Hello world, this is\n a test of the tokenizer.";
  auto ours = (*sess)->tokenize(text, true, true);
  ASSERT_TRUE(ours.is_ok());
  EXPECT_EQ(*ours, (*reference)->encode(text, true, true));
  EXPECT_EQ(ours->front(), 1);  // <s>, from the tokenizer's post-processor

  auto format = (*sess)->chat_template("");
  ASSERT_TRUE(format.is_ok()) << format.message();
  EXPECT_FALSE(format->fell_back);
  auto rendered = (*sess)->render_chat(*format, R"([{"role": "user", "content": "hi"}])", true);
  ASSERT_TRUE(rendered.is_ok()) << rendered.message();
  EXPECT_EQ(*rendered, "[user] hi</s>");

  // chat_template.jinja, where newer transformers save the template, wins over the config's.
  write_text(dir + "/chat_template.jinja", "J{{ bos_token }}");
  auto again = session::create(so);
  ASSERT_TRUE(again.is_ok()) << again.message();
  auto jinja = (*again)->chat_template("");
  ASSERT_TRUE(jinja.is_ok());
  auto rendered2 = (*again)->render_chat(*jinja, "[]", false);
  ASSERT_TRUE(rendered2.is_ok());
  EXPECT_EQ(*rendered2, "J<s>");
}

TEST(hf_checkpoint, without_tokenizer_json_a_session_says_what_is_missing) {
  const std::string dir = test::scratch("hf_checkpoint/no_tokenizer");
  ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/qwen3-F16.gguf"), dir).is_ok());
  ASSERT_TRUE(load_model(dir).is_ok());  // the model itself needs no tokenizer
  session_options so;
  so.model_path = dir;
  auto sess = session::create(so);
  ASSERT_FALSE(sess.is_ok());
  EXPECT_NE(sess.message().find("tokenizer.json"), std::string::npos) << sess.message();
}

TEST(hf_checkpoint, folder_problems_are_named) {
  const std::string dir = test::scratch("hf_checkpoint/problems");
  auto fresh = [&] { ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/llama-untied-F16.gguf"), dir).is_ok()); };
  auto expect_error = [&](const std::string& want) {
    const std::string msg = load_error(dir);
    EXPECT_NE(msg.find(want), std::string::npos) << "wanted '" << want << "' in: " << msg;
    EXPECT_EQ(msg.rfind(dir, 0), 0u) << "the message should start with the folder: " << msg;
  };

  fresh();
  fs::remove(dir + "/config.json");
  expect_error("no config.json");

  fresh();
  write_text(dir + "/config.json", "{ not json");
  expect_error("config.json: not valid JSON");

  fresh();
  json c = read_json(dir + "/config.json");
  c["architectures"] = {"MixtralForCausalLM"};
  write_text(dir + "/config.json", c.dump());
  expect_error("architecture MixtralForCausalLM is not supported (supported: LlamaForCausalLM");

  fresh();
  c = read_json(dir + "/config.json");
  c.erase("hidden_size");
  write_text(dir + "/config.json", c.dump());
  expect_error("config.json: hidden_size is missing");

  fresh();
  c = read_json(dir + "/config.json");
  c["num_attention_heads"] = -4;
  write_text(dir + "/config.json", c.dump());
  expect_error("num_attention_heads must be a positive integer, found -4");

  fresh();
  c = read_json(dir + "/config.json");
  c["num_hidden_layers"] = 1;
  write_text(dir + "/config.json", c.dump());
  expect_error("belongs to layer 1, but config.json says num_hidden_layers is 1");

  fresh();
  c = read_json(dir + "/config.json");
  c["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  write_text(dir + "/config.json", c.dump());
  expect_error("rope_scaling type dynamic is not supported");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) { copy_all_but(f, w, "lm_head.weight"); });
  expect_error("tie_word_embeddings is false, but the checkpoint has no lm_head.weight");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) { copy_all_but(f, w, "model.layers.1.mlp.up_proj.weight"); });
  expect_error("missing tensor blk.1.ffn_up.weight");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    copy_all_but(f, w, "");
    std::vector<uint8_t> b(8);
    ASSERT_TRUE(w.add("model.layers.0.mlp.experts.0.w1.weight", safetensors::dtype::f32, {2}, b).is_ok());
  });
  expect_error("model.safetensors: tensor model.layers.0.mlp.experts.0.w1.weight is not part of a LlamaForCausalLM model");

  fresh();
  rewrite_weights(dir, [](const safetensors::file& f, safetensors::writer& w) {
    for (const auto& t : f.tensors()) {
      if (t.name == "model.layers.0.mlp.up_proj.weight") {
        std::vector<uint8_t> q(size_t(t.n_elements()));
        ASSERT_TRUE(w.add(t.name, safetensors::dtype::i8, t.shape, q).is_ok());
      } else {
        ASSERT_TRUE(w.add(t.name, t.type, t.shape, {t.data, size_t(t.n_bytes)}).is_ok());
      }
    }
  });
  expect_error("tensor model.layers.0.mlp.up_proj.weight has dtype I8");

  fresh();
  write_text(dir + "/model.safetensors", std::string("\x10\0\0\0\0\0\0\0{\"a\": 1}", 16));
  expect_error("model.safetensors");

  fresh();
  fs::rename(dir + "/model.safetensors", dir + "/pytorch_model.bin");
  expect_error("PyTorch");

  fresh();
  write_text(dir + "/model.safetensors.index.json",
             json{{"weight_map", {{"model.norm.weight", "model-00002-of-00002.safetensors"}}}}.dump());
  expect_error("model-00002-of-00002.safetensors");

  fresh();
  write_text(dir + "/model.safetensors.index.json", json{{"weight_map", {{"model.norm.weight", "../model.safetensors"}}}}.dump());
  expect_error("is not a file name in this folder");
}

TEST(hf_checkpoint, cli_quantizes_runs_and_describes_a_folder) {
  if (test::emulated) GTEST_SKIP() << "the CLI runs under an emulator; the library tests cover the loader";
  const std::string dir = llama_dir("cli");
  const std::string out = test::scratch("hf_checkpoint/cli-Q8_0.gguf");
  auto q = test::run_glia({"quantize", dir, out, "Q8_0"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  // The quantized file matches llama.cpp's logits for the F16 GGUF within the Q8_0 tolerance.
  auto m = load_model(out);
  ASSERT_TRUE(m.is_ok()) << m.message();
  auto be = make_cpu_backend(2);
  float worst = 0.0f;
  test::expect_golden_logits(**m, test::read_golden("llama-untied-F16"), test::tolerance_for("llama-tied-Q8_0"), *be, 512,
                             dtype::f32, false, worst);
  // It keeps the tokenizer: a session on it tokenizes as the folder does.
  session_options so;
  so.model_path = out;
  auto sess = session::create(so);
  ASSERT_TRUE(sess.is_ok()) << sess.message();
  auto ids = (*sess)->tokenize("Hello world", true, true);
  ASSERT_TRUE(ids.is_ok());
  EXPECT_EQ(*ids, (*tokenizer::from_hf(dir))->encode("Hello world", true, true));

  auto run = test::run_glia({"run", "-m", dir, "-p", "Hello", "-n", "4", "--temp", "0", "-c", "64"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  auto info = test::run_glia({"info", "-m", dir});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("llama"), std::string::npos) << info.out;
  auto tok = test::run_glia({"tokenize", "-m", dir, "-p", "Hello"});
  EXPECT_EQ(tok.exit_code, 0) << tok.err;
}


// Most checkpoints ship BF16 weights: they are used as they are, so a BF16 checkpoint of the Brown
// model gives exactly the logits of `glia quantize brown-f32.gguf BF16` (the same bits, rounded the
// same way, in the same kernels).
TEST(hf_checkpoint, bf16_weights_are_used_as_they_are) {
  if (test::emulated) GTEST_SKIP() << "the CLI runs under an emulator";
  const std::string dir = test::scratch("hf_checkpoint/bf16");
  test::hf_export_options o;
  o.bf16 = true;
  ASSERT_TRUE(test::export_hf_checkpoint(test::testdata("models/brown-f32.gguf"), dir, o).is_ok());
  const std::string gguf = test::scratch("hf_checkpoint/brown-BF16.gguf");
  auto q = test::run_glia({"quantize", test::testdata("models/brown-f32.gguf"), gguf, "BF16"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto logits_of = [](const std::string& path) {
    auto m = load_model(path);
    EXPECT_TRUE(m.is_ok()) << m.message();
    auto be = make_cpu_backend(2);
    auto cache = kv_cache::create((*m)->profile, 64, 64, dtype::f32, *be);
    forward_pass fwd(**m, *be);
    const std::vector<int32_t> ids = {1, 45, 300, 7, 999, 12, 600};
    std::vector<float> out;
    EXPECT_TRUE(fwd.run(*cache, ids, 0, true, out).is_ok());
    return out;
  };
  const auto hf = logits_of(dir), reference = logits_of(gguf);
  ASSERT_EQ(hf.size(), reference.size());
  EXPECT_EQ(hf, reference);
  auto m = load_model(dir);
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ((*m)->file->get_int("general.file_type"), 32);  // MOSTLY_BF16, as the converter writes it
}

}  // namespace
}  // namespace glia
