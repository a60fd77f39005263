// glia synth: the files load with the geometry of the real models, run with finite logits,
// tokenize, follow the mix rules, and do not depend on the thread count. The Llama 3 RoPE factors
// are checked against the pack's llama-rope-llama3 file (made by llama.cpp's converter formula).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <unordered_set>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/synth.h"
#include "tools_test_util.h"

namespace glia {
namespace {

std::string synth_file(const std::string& preset, file_type ft, int n_layer, int64_t n_vocab, int n_threads = 2,
                       uint64_t seed = 7, const std::string& suffix = "") {
  synth_options o;
  o.preset = find_synth_preset(preset);
  EXPECT_NE(o.preset, nullptr) << preset;
  o.ftype = ft;
  o.seed = seed;
  o.n_threads = n_threads;
  o.n_layer = n_layer;
  o.n_vocab = n_vocab;
  const std::string path = test::scratch("synth-" + preset + "-" + find_file_type(ft)->name + suffix + ".gguf");
  auto r = synth_model(o, path);
  EXPECT_TRUE(r.is_ok()) << r.message();
  return path;
}

TEST(synth, llama3_rope_factors_match_the_converter_values_in_the_pack) {
  auto f = gguf::file::open(test::testdata("models/llama-rope-llama3-F16.gguf"));
  ASSERT_TRUE(f.is_ok()) << f.message();
  const auto* t = (*f)->find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->type, 0u);
  // README section 7: base 500000, factor 8, low 1, high 4, original context 64, head_dim 64.
  const auto got = llama3_rope_factors({8.0, 1.0, 4.0, 64}, 500000.0, 64);
  ASSERT_EQ(int64_t(got.size()), t->ne[0]);
  const auto* want = reinterpret_cast<const float*>(t->data);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f * want[i]) << i;
}

TEST(synth, vocabulary_is_sentencepiece_shaped) {
  auto v = make_synth_vocab(5000, 3);
  ASSERT_TRUE(v.is_ok()) << v.message();
  ASSERT_EQ(v->tokens.size(), 5000u);
  ASSERT_EQ(v->scores.size(), 5000u);
  ASSERT_EQ(v->types.size(), 5000u);
  EXPECT_EQ(v->tokens[0], "<unk>");
  EXPECT_EQ(v->types[0], 2);
  EXPECT_EQ(v->tokens[1], "<s>");
  EXPECT_EQ(v->tokens[2], "</s>");
  EXPECT_EQ(v->types[1], 3);
  EXPECT_EQ(v->tokens[3], "<0x00>");
  EXPECT_EQ(v->tokens[3 + 0x0A], "<0x0A>");
  EXPECT_EQ(v->tokens[258], "<0xFF>");
  for (int i = 3; i < 259; ++i) EXPECT_EQ(v->types[size_t(i)], 6);
  std::unordered_set<std::string> seen(v->tokens.begin(), v->tokens.end());
  EXPECT_EQ(seen.size(), v->tokens.size());
  for (size_t i = 260; i < v->tokens.size(); ++i) EXPECT_LT(v->scores[i], v->scores[i - 1]);
  auto again = make_synth_vocab(5000, 3);
  EXPECT_EQ(again->tokens, v->tokens);
  EXPECT_FALSE(make_synth_vocab(100, 3).is_ok());
}

struct preset_case {
  const char* preset;
  const char* arch;
  int64_t n_embd, n_ff;
  int n_head, n_head_kv, head_dim;
  float rope_base;
  bool tied, qkv_bias, qk_norm;
};

class synth_presets_test : public ::testing::TestWithParam<preset_case> {};

TEST_P(synth_presets_test, loads_with_the_real_geometry_and_runs) {
  const preset_case c = GetParam();
  // Gemma 3 needs six layers to show its pattern (five local, then a global one).
  const int n_layer = std::string(c.arch) == "gemma3" ? 6 : 2;
  const std::string path = synth_file(c.preset, file_type::mostly_q8_0, n_layer, 600);
  auto m = load_model(path);
  ASSERT_TRUE(m.is_ok()) << m.message();
  const family_profile& p = (*m)->profile;
  EXPECT_EQ(p.arch, c.arch);
  EXPECT_EQ(p.n_embd, c.n_embd);
  EXPECT_EQ(p.n_ff, c.n_ff);
  EXPECT_EQ(p.n_layer, n_layer);
  EXPECT_EQ(p.n_vocab, 600);
  EXPECT_EQ(p.qkv_bias, c.qkv_bias);
  EXPECT_EQ(p.qk_norm, c.qk_norm);
  EXPECT_EQ((*m)->weights.tied_output, c.tied);
  for (int il = 0; il < n_layer; ++il) {
    const auto& l = p.layers[size_t(il)];
    EXPECT_EQ(l.n_head, c.n_head);
    EXPECT_EQ(l.n_head_kv, c.n_head_kv);
    EXPECT_EQ(l.head_dim_k, c.head_dim);
    if (std::string(c.arch) == "gemma3") {
      EXPECT_EQ(l.sliding, il % 6 < 5) << il;
      EXPECT_EQ(l.window, l.sliding ? 512 : 0);
      EXPECT_EQ(l.rope.freq_base, l.sliding ? 10000.0f : 1e6f);
    } else {
      EXPECT_FALSE(l.sliding);
      EXPECT_EQ(l.rope.freq_base, c.rope_base);
    }
  }
  // A prompt of 12 random-ish ids through every layer: finite, not constant.
  auto be = make_cpu_backend(2);
  auto cache = kv_cache::create(p, 64, 16, dtype::f16, *be);
  ASSERT_TRUE(cache.is_ok()) << cache.message();
  forward_pass fwd(**m, *be);
  std::vector<int32_t> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(int32_t((i * 97 + 5) % 600));
  std::vector<float> logits;
  status s = fwd.run(*cache, ids, 0, true, logits);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(logits.size(), size_t(12 * 600));
  double sum = 0, sum2 = 0;
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum2 += double(v) * v;
  }
  const double sd = std::sqrt(sum2 / double(logits.size()) - (sum / double(logits.size())) * (sum / double(logits.size())));
  EXPECT_GT(sd, 0.05);
  EXPECT_LT(sd, 50.0);
}

INSTANTIATE_TEST_SUITE_P(
    presets, synth_presets_test,
    ::testing::Values(preset_case{"tinyllama", "llama", 2048, 5632, 32, 4, 64, 10000.0f, false, false, false},
                      preset_case{"llama3.2-1b", "llama", 2048, 8192, 32, 8, 64, 500000.0f, true, false, false},
                      preset_case{"qwen2.5-0.5b", "qwen2", 896, 4864, 14, 2, 64, 1e6f, true, true, false},
                      preset_case{"gemma3-1b", "gemma3", 1152, 6912, 4, 1, 256, 1e6f, true, false, true}),
    [](const auto& info) { return test::param_name(info.param.preset); });

TEST(synth, llama3_file_carries_rope_freqs_and_metadata) {
  const std::string path = synth_file("llama3.2-1b", file_type::mostly_q8_0, 1, 600);
  auto f = gguf::file::open(path);
  ASSERT_TRUE(f.is_ok()) << f.message();
  const auto* rf = (*f)->find_tensor("rope_freqs.weight");
  ASSERT_NE(rf, nullptr);
  EXPECT_EQ(rf->ne[0], 32);
  const auto want = llama3_rope_factors({32.0, 1.0, 4.0, 8192}, 500000.0, 64);
  EXPECT_EQ(std::memcmp(rf->data, want.data(), 32 * 4), 0);
  EXPECT_EQ((*f)->get_int("general.file_type"), 7);
  EXPECT_EQ((*f)->get_int("general.quantization_version"), 2);
  EXPECT_EQ((*f)->get_int("llama.block_count"), 1);
  EXPECT_EQ((*f)->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ((*f)->alignment(), 32u);
  // Every tensor a llama.cpp Llama 3.2 file has, and no output.weight (tied).
  for (const char* n : {"token_embd.weight", "output_norm.weight", "blk.0.attn_norm.weight", "blk.0.attn_q.weight",
                        "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
                        "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight"})
    EXPECT_NE((*f)->find_tensor(n), nullptr) << n;
  EXPECT_EQ((*f)->find_tensor("output.weight"), nullptr);
  EXPECT_EQ((*f)->tensors().size(), 12u);
}

TEST(synth, q4_k_m_mix_with_fallbacks_on_qwen_widths) {
  // Qwen2.5-0.5B is 896 wide (3.5 super-blocks): llama.cpp's fallbacks pick Q5_0 / Q8_0 there.
  const std::string path = synth_file("qwen2.5-0.5b", file_type::mostly_q4_k_m, 2, 600);
  auto f = gguf::file::open(path);
  ASSERT_TRUE(f.is_ok()) << f.message();
  auto type_of = [&](const std::string& n) { return std::string(type_name((*f)->find_tensor(n)->type)); };
  EXPECT_EQ(type_of("token_embd.weight"), "Q8_0");        // tied output: Q6_K does not fit 896
  EXPECT_EQ(type_of("blk.0.attn_q.weight"), "Q5_0");      // Q4_K does not fit 896
  EXPECT_EQ(type_of("blk.0.ffn_down.weight"), "Q4_K");    // rows of 4864 = 19 x 256; layer 0 of 2: no bump
  EXPECT_EQ(type_of("blk.1.ffn_down.weight"), "Q6_K");    // last eighth
  EXPECT_EQ(type_of("blk.1.attn_v.weight"), "Q8_0");      // Q6_K -> Q8_0
  EXPECT_EQ(type_of("blk.0.attn_q.bias"), "F32");
  EXPECT_EQ(type_of("blk.0.attn_norm.weight"), "F32");
  EXPECT_EQ((*f)->get_int("general.file_type"), 15);
}

TEST(synth, output_does_not_depend_on_threads_and_follows_the_seed) {
  const auto a = test::read_file(synth_file("qwen2.5-0.5b", file_type::mostly_q4_0, 1, 600, 1, 11, "-t1"));
  const auto b = test::read_file(synth_file("qwen2.5-0.5b", file_type::mostly_q4_0, 1, 600, 2, 11, "-t2"));
  const auto c = test::read_file(synth_file("qwen2.5-0.5b", file_type::mostly_q4_0, 1, 600, 2, 12, "-s12"));
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(synth, tokenizer_round_trips_text_through_the_session) {
  const std::string path = synth_file("gemma3-1b", file_type::mostly_q8_0, 1, 2000);
  session_options so;
  so.model_path = path;
  so.n_ctx = 128;
  auto s = session::create(so);
  ASSERT_TRUE(s.is_ok()) << s.message();
  const std::string text = "Hello world, 42 tokens of caf\xC3\xA9!";
  auto ids = (*s)->tokenize(text, true);
  ASSERT_TRUE(ids.is_ok()) << ids.message();
  ASSERT_GT(ids->size(), 2u);
  EXPECT_EQ((*ids)[0], 1);  // BOS
  EXPECT_EQ((*s)->detokenize(std::span(*ids).subspan(1)), text);
}

TEST(synth, cli_writes_a_model_that_glia_run_uses) {
  const std::string out = test::scratch("cli-synth-tiny.gguf");
  auto r = tools_test::run_cli("synth -q --preset tinyllama --type Q8_0 --layers 1 --vocab 600 --out " + tools_test::quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = tools_test::run_cli("run -m " + tools_test::quote(out) + " -p 'Once upon' -n 8 --temp 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = tools_test::run_cli("synth --preset nosuch --out " + tools_test::quote(out));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown preset"), std::string::npos) << r.err;
}

// Seeds are decimal whatever their digits ("010" is ten, as for glia run), and out-of-range or
// negative seeds are refused rather than wrapped or clamped.
TEST(synth, seeds_are_decimal_and_in_range) {
  const std::string base = "synth -q --preset tinyllama --type Q4_0 --layers 1 --vocab 600 --out ";
  const std::string a = test::scratch("synth-seed-010.gguf"), b = test::scratch("synth-seed-10.gguf");
  ASSERT_EQ(tools_test::run_cli(base + tools_test::quote(a) + " -s 010").exit_code, 0);
  ASSERT_EQ(tools_test::run_cli(base + tools_test::quote(b) + " -s 10").exit_code, 0);
  EXPECT_EQ(test::read_file(a), test::read_file(b));
  for (const char* bad : {"-1", "18446744073709551616", "0x10"}) {
    auto r = tools_test::run_cli(base + tools_test::quote(test::scratch("synth-bad-seed.gguf")) + " -s " + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--seed"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace glia
