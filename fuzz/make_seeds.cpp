// Writes small seed inputs for the gguf_model target: tiny models of each family switch (biases,
// QK-norm, post norms, sliding windows, V = K, rope_freqs, YaRN, quantized matrices) with a small
// SentencePiece vocabulary, and a "zoo" file with a value of every metadata type and a tensor of
// every implemented type. Tiny inputs keep libFuzzer fast while reaching binding and the forward.
//
//   fuzz_make_seeds DIR
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "quant/types.h"

namespace {

using namespace glia;

struct model_spec {
  std::string file, arch;
  int n_embd = 8, n_layer = 1, n_head = 2, n_kv = 1, n_ff = 16, n_ctx = 8;
  dtype mat = dtype::f32;  // type of the 2-D weights
  bool qkv_bias = false, qk_norm = false, post_norms = false, untied = false, rope_freqs = false;
  bool output_scale = false;
  std::vector<bool> v_from_k{};  // per layer: no attn_v tensor
  std::function<void(gguf::writer&)> keys{};
};

std::mt19937 rng(1234);

std::vector<uint8_t> encode(dtype t, const std::vector<float>& v) {
  const type_traits& tt = type_info(t);
  std::vector<uint8_t> out(row_bytes(tt, int64_t(v.size())));
  tt.quantize_row(v.data(), out.data(), int64_t(v.size()));
  return out;
}

void add(gguf::writer& w, const std::string& name, dtype t, std::vector<int64_t> dims, float base, float spread) {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  std::normal_distribution<float> nd(base, spread);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  // Rows are quantized one at a time, as a file stores them.
  std::vector<uint8_t> data;
  for (int64_t r = 0; r < n / dims[0]; ++r) {
    auto row = encode(t, std::vector<float>(v.begin() + r * dims[0], v.begin() + (r + 1) * dims[0]));
    data.insert(data.end(), row.begin(), row.end());
  }
  status s = w.add_tensor(name, uint32_t(t), dims, data);
  if (!s) std::fprintf(stderr, "seed tensor %s: %s\n", name.c_str(), s.message().c_str());
}

void add_vocab(gguf::writer& w) {
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "<0xC3>", "\xE2\x96\x81", "a",
                                           "b", "c", "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab", "abc",
                                           "<|im_end|>", "<tool>"};
  const std::vector<int32_t> types = {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 3, 4};
  std::vector<float> scores;
  for (size_t i = 0; i < tokens.size(); ++i) scores.push_back(-float(i));
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
}

gguf::writer make_model(const model_spec& s) {
  gguf::writer w;
  const std::string a = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", s.file);
  w.set_u32(a + "context_length", uint32_t(s.n_ctx));
  w.set_u32(a + "embedding_length", uint32_t(s.n_embd));
  w.set_u32(a + "block_count", uint32_t(s.n_layer));
  w.set_u32(a + "feed_forward_length", uint32_t(s.n_ff));
  w.set_u32(a + "attention.head_count", uint32_t(s.n_head));
  w.set_u32(a + "attention.head_count_kv", uint32_t(s.n_kv));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (s.keys) s.keys(w);
  add_vocab(w);
  const int64_t n_vocab = 16, hd = s.n_embd / s.n_head;
  add(w, "token_embd.weight", s.mat, {s.n_embd, n_vocab}, 0, 0.15f);
  add(w, "output_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
  if (s.untied) add(w, "output.weight", s.mat, {s.n_embd, n_vocab}, 0, 0.15f);
  if (s.rope_freqs) add(w, "rope_freqs.weight", dtype::f32, {hd / 2}, 1.5f, 0.1f);
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(w, p + "attn_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    add(w, p + "attn_q.weight", s.mat, {s.n_embd, s.n_head * hd}, 0, 0.08f);
    add(w, p + "attn_k.weight", s.mat, {s.n_embd, s.n_kv * hd}, 0, 0.08f);
    if (size_t(il) >= s.v_from_k.size() || !s.v_from_k[size_t(il)])
      add(w, p + "attn_v.weight", s.mat, {s.n_embd, s.n_kv * hd}, 0, 0.08f);
    if (s.qkv_bias) {
      add(w, p + "attn_q.bias", dtype::f32, {s.n_head * hd}, 0, 0.1f);
      add(w, p + "attn_k.bias", dtype::f32, {s.n_kv * hd}, 0, 0.1f);
      add(w, p + "attn_v.bias", dtype::f32, {s.n_kv * hd}, 0, 0.1f);
    }
    if (s.qk_norm) {
      add(w, p + "attn_q_norm.weight", dtype::f32, {hd}, 1, 0.1f);
      add(w, p + "attn_k_norm.weight", dtype::f32, {hd}, 1, 0.1f);
    }
    add(w, p + "attn_output.weight", s.mat, {s.n_head * hd, s.n_embd}, 0, 0.08f);
    if (s.post_norms) add(w, p + "post_attention_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    add(w, p + "ffn_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    add(w, p + "ffn_gate.weight", s.mat, {s.n_embd, s.n_ff}, 0, 0.08f);
    add(w, p + "ffn_up.weight", s.mat, {s.n_embd, s.n_ff}, 0, 0.08f);
    add(w, p + "ffn_down.weight", s.mat, {s.n_ff, s.n_embd}, 0, 0.08f);
    if (s.post_norms) add(w, p + "post_ffw_norm.weight", dtype::f32, {s.n_embd}, 1, 0.1f);
    if (s.output_scale) add(w, p + "layer_output_scale.weight", dtype::f32, {1}, 0.75f, 0.1f);
  }
  return w;
}

gguf::value scalar(gguf::value_type t, std::variant<uint64_t, int64_t, double, bool, std::string> x) {
  gguf::value v;
  v.type = t;
  std::visit([&](auto&& e) { v.data = e; }, x);
  return v;
}

gguf::value array(gguf::value_type elem, std::vector<gguf::value> e) {
  gguf::value v;
  v.type = gguf::value_type::array;
  v.elem_type = elem;
  v.data = std::move(e);
  return v;
}

// Every metadata type, and one 256-element row of every implemented tensor type (256 is a whole
// number of blocks for all of them).
gguf::writer make_zoo() {
  using vt = gguf::value_type;
  gguf::writer w;
  w.set_string("general.architecture", "zoo");
  w.set("zoo.u8", scalar(vt::u8, uint64_t(200)));
  w.set("zoo.i8", scalar(vt::i8, int64_t(-100)));
  w.set("zoo.u16", scalar(vt::u16, uint64_t(60000)));
  w.set("zoo.i16", scalar(vt::i16, int64_t(-30000)));
  w.set("zoo.u32", scalar(vt::u32, uint64_t(4000000000u)));
  w.set("zoo.i32", scalar(vt::i32, int64_t(-2000000000)));
  w.set("zoo.u64", scalar(vt::u64, uint64_t(1) << 60));
  w.set("zoo.i64", scalar(vt::i64, -(int64_t(1) << 60)));
  w.set("zoo.f32", scalar(vt::f32, 1.5));
  w.set("zoo.f64", scalar(vt::f64, -2.25));
  w.set("zoo.bool", scalar(vt::boolean, true));
  w.set("zoo.string", scalar(vt::string, std::string("text \xE2\x96\x81")));
  w.set("zoo.nested", array(vt::array, {array(vt::u16, {scalar(vt::u16, uint64_t(1)), scalar(vt::u16, uint64_t(2))}),
                                        array(vt::string, {scalar(vt::string, std::string("x"))})}));
  w.set("zoo.bools", array(vt::boolean, {scalar(vt::boolean, false), scalar(vt::boolean, true)}));
  w.set_alignment(64);
  for (const type_traits& t : all_types()) add(w, std::string("zoo.") + t.name, t.type, {256}, 0, 1);
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  using vt = gguf::value_type;
  std::vector<model_spec> specs = {
      {.file = "llama-f32", .arch = "llama", .n_layer = 2},
      {.file = "llama-q8_0-untied", .arch = "llama", .n_embd = 32, .n_ff = 32, .mat = dtype::q8_0, .untied = true},
      {.file = "llama-q4_0-yarn", .arch = "llama", .n_embd = 32, .n_ff = 32, .mat = dtype::q4_0,
       .keys = [](gguf::writer& w) {
         w.set_string("llama.rope.scaling.type", "yarn");
         w.set_f32("llama.rope.scaling.factor", 4);
         w.set_u32("llama.rope.scaling.original_context_length", 4);
       }},
      {.file = "llama-f16-rope-freqs", .arch = "llama", .mat = dtype::f16, .rope_freqs = true},
      {.file = "qwen2-bias", .arch = "qwen2", .qkv_bias = true},
      {.file = "qwen3-qk-norm", .arch = "qwen3", .qk_norm = true},
      {.file = "gemma-bf16", .arch = "gemma", .mat = dtype::bf16},
      {.file = "gemma2-swa", .arch = "gemma2", .n_layer = 2, .post_norms = true,
       .keys = [](gguf::writer& w) {
         w.set_u32("gemma2.attention.sliding_window", 2);
         w.set_f32("gemma2.attn_logit_softcapping", 2);
         w.set_f32("gemma2.final_logit_softcapping", 4);
       }},
      {.file = "gemma3-swa", .arch = "gemma3", .n_layer = 2, .qk_norm = true, .post_norms = true,
       .keys = [](gguf::writer& w) {
         w.set_u32("gemma3.attention.sliding_window", 2);
         w.set_u32("gemma3.attention.sliding_window_pattern", 2);
         w.set_string("gemma3.rope.scaling.type", "linear");
         w.set_f32("gemma3.rope.scaling.factor", 8);
       }},
      {.file = "gemma4-v-from-k", .arch = "gemma4", .n_layer = 2, .qk_norm = true, .post_norms = true,
       .rope_freqs = true, .output_scale = true, .v_from_k = {false, true},
       .keys = [](gguf::writer& w) {
         w.set_u32("gemma4.attention.sliding_window", 2);
         w.set("gemma4.attention.sliding_window_pattern",
               array(vt::boolean, {scalar(vt::boolean, true), scalar(vt::boolean, false)}));
         w.set_f32("gemma4.final_logit_softcapping", 6);
       }},
  };
  int failures = 0;
  auto write = [&](const gguf::writer& w, const std::string& name) {
    status s = w.write((dir / (name + ".gguf")).string());
    if (!s) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), s.message().c_str());
      ++failures;
    }
  };
  for (const auto& s : specs) write(make_model(s), s.file);
  write(make_zoo(), "zoo");
  std::printf("wrote %zu seeds to %s\n", specs.size() + 1, dir.c_str());
  return failures == 0 ? 0 : 1;
}
