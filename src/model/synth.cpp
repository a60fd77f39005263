// glia synth: presets, metadata, tensor list and the generate-quantize-stream loop.
#include "model/synth.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace glia {
namespace {

// Geometry of the real models (their config.json files on the Hugging Face hub).
constexpr synth_preset k_presets[] = {
    // TinyLlama/TinyLlama-1.1B-Chat-v1.0
    {"tinyllama", "TinyLlama-1.1B (synthetic)", "llama", 2048, 22, 32, 4, 64, 5632, 32000, 2048, 10000.0, 0.0, 0, 1e-5,
     false, false, false, {}},
    // meta-llama/Llama-3.2-1B: rope_scaling {rope_type llama3, factor 32, low 1, high 4, original 8192}
    {"llama3.2-1b", "Llama-3.2-1B (synthetic)", "llama", 2048, 16, 32, 8, 64, 8192, 128256, 131072, 500000.0, 0.0, 0,
     1e-5, true, false, false, {32.0, 1.0, 4.0, 8192}},
    // meta-llama/Meta-Llama-3-8B (the CUDA backend's bandwidth benchmark)
    {"llama3-8b", "Llama-3-8B (synthetic)", "llama", 4096, 32, 32, 8, 128, 14336, 128256, 8192, 500000.0, 0.0, 0, 1e-5,
     false, false, false, {}},
    // Qwen/Qwen2.5-0.5B
    {"qwen2.5-0.5b", "Qwen2.5-0.5B (synthetic)", "qwen2", 896, 24, 14, 2, 64, 4864, 151936, 32768, 1000000.0, 0.0, 0,
     1e-6, true, true, false, {}},
    // google/gemma-3-1b-pt: head_dim 256, sliding window 512 on five of every six layers
    {"gemma3-1b", "Gemma-3-1B (synthetic)", "gemma3", 1152, 26, 4, 1, 256, 6912, 262144, 32768, 1000000.0, 10000.0, 512,
     1e-6, true, false, true, {}},
};

// Standard deviations of the random weights (the test-data pack uses 0.08 / 0.15 on width 128;
// these are smaller because the real widths are 7-16x larger).
constexpr float k_sd_matrix = 0.02f, k_sd_embedding = 0.05f, k_sd_norm = 0.02f, k_sd_bias = 0.02f;

enum class init { normal, norm, fixed };

struct synth_tensor {
  std::string name;
  std::vector<int64_t> dims;
  init how = init::normal;
  float sd = 0.0f;
  std::vector<float> values;  // init::fixed
};

gguf::value val_u32(uint32_t v) { gguf::value x; x.type = gguf::value_type::u32; x.data = uint64_t(v); return x; }
gguf::value val_i32(int32_t v) { gguf::value x; x.type = gguf::value_type::i32; x.data = int64_t(v); return x; }
gguf::value val_f32(double v) { gguf::value x; x.type = gguf::value_type::f32; x.data = double(float(v)); return x; }
gguf::value val_bool(bool v) { gguf::value x; x.type = gguf::value_type::boolean; x.data = v; return x; }
gguf::value val_str(std::string v) { gguf::value x; x.type = gguf::value_type::string; x.data = std::move(v); return x; }
gguf::value val_array(gguf::value_type t, std::vector<gguf::value> elems) {
  gguf::value x;
  x.type = gguf::value_type::array;
  x.elem_type = t;
  x.data = std::move(elems);
  return x;
}

using metadata_list = std::vector<std::pair<std::string, gguf::value>>;

metadata_list make_metadata(const synth_preset& p, int n_layer, const synth_vocab& vocab, const synth_options& o) {
  metadata_list md;
  const std::string a = p.arch;
  auto put = [&](std::string key, gguf::value v) { md.emplace_back(std::move(key), std::move(v)); };
  put("general.architecture", val_str(a));
  put("general.name", val_str(p.model_name));
  put("general.description", val_str(fmt::format("random weights (glia synth --preset {} --seed {}); not a trained model",
                                                 p.name, o.seed)));
  put(a + ".context_length", val_u32(uint32_t(p.n_ctx)));
  put(a + ".embedding_length", val_u32(uint32_t(p.n_embd)));
  put(a + ".block_count", val_u32(uint32_t(n_layer)));
  put(a + ".feed_forward_length", val_u32(uint32_t(p.n_ff)));
  put(a + ".attention.head_count", val_u32(uint32_t(p.n_head)));
  put(a + ".attention.head_count_kv", val_u32(uint32_t(p.n_head_kv)));
  put(a + ".attention.key_length", val_u32(uint32_t(p.head_dim)));
  put(a + ".attention.value_length", val_u32(uint32_t(p.head_dim)));
  put(a + ".attention.layer_norm_rms_epsilon", val_f32(p.rms_eps));
  put(a + ".rope.freq_base", val_f32(p.rope_base));
  put(a + ".rope.dimension_count", val_u32(uint32_t(p.head_dim)));
  if (p.sliding_window > 0) {
    put(a + ".attention.sliding_window", val_u32(uint32_t(p.sliding_window)));
    put(a + ".rope.freq_base_swa", val_f32(p.rope_base_swa));
  }
  put(a + ".vocab_size", val_u32(uint32_t(vocab.tokens.size())));

  std::vector<gguf::value> tokens, scores, types;
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    tokens.push_back(val_str(vocab.tokens[i]));
    scores.push_back(val_f32(vocab.scores[i]));
    types.push_back(val_i32(vocab.types[i]));
  }
  put("tokenizer.ggml.model", val_str("llama"));
  put("tokenizer.ggml.tokens", val_array(gguf::value_type::string, std::move(tokens)));
  put("tokenizer.ggml.scores", val_array(gguf::value_type::f32, std::move(scores)));
  put("tokenizer.ggml.token_type", val_array(gguf::value_type::i32, std::move(types)));
  put("tokenizer.ggml.bos_token_id", val_u32(1));
  put("tokenizer.ggml.eos_token_id", val_u32(2));
  put("tokenizer.ggml.unknown_token_id", val_u32(0));
  put("tokenizer.ggml.add_bos_token", val_bool(true));
  put("tokenizer.ggml.add_eos_token", val_bool(false));
  set_quantized_file_keys(md, o.ftype);
  return md;
}

// Tensor names and ggml dims ([n_in, n_out]) as llama.cpp's loader expects them for the arch.
std::vector<synth_tensor> make_tensors(const synth_preset& p, int n_layer, int64_t n_vocab) {
  std::vector<synth_tensor> ts;
  const int64_t q_out = int64_t(p.n_head) * p.head_dim, kv_out = int64_t(p.n_head_kv) * p.head_dim;
  auto matrix = [&](std::string name, int64_t n_in, int64_t n_out, float sd) {
    ts.push_back({std::move(name), {n_in, n_out}, init::normal, sd, {}});
  };
  auto vec = [&](std::string name, int64_t n, init how, float sd) { ts.push_back({std::move(name), {n}, how, sd, {}}); };
  matrix("token_embd.weight", p.n_embd, n_vocab, k_sd_embedding);
  vec("output_norm.weight", p.n_embd, init::norm, k_sd_norm);
  if (!p.tied) matrix("output.weight", p.n_embd, n_vocab, k_sd_embedding);
  if (p.rope_scaling.factor > 0)
    ts.push_back({"rope_freqs.weight", {p.head_dim / 2}, init::fixed, 0.0f,
                  llama3_rope_factors(p.rope_scaling, p.rope_base, p.head_dim)});
  for (int il = 0; il < n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    vec(b + "attn_norm.weight", p.n_embd, init::norm, k_sd_norm);
    matrix(b + "attn_q.weight", p.n_embd, q_out, k_sd_matrix);
    matrix(b + "attn_k.weight", p.n_embd, kv_out, k_sd_matrix);
    matrix(b + "attn_v.weight", p.n_embd, kv_out, k_sd_matrix);
    if (p.qkv_bias) {
      vec(b + "attn_q.bias", q_out, init::normal, k_sd_bias);
      vec(b + "attn_k.bias", kv_out, init::normal, k_sd_bias);
      vec(b + "attn_v.bias", kv_out, init::normal, k_sd_bias);
    }
    if (p.gemma_norms) {
      vec(b + "attn_q_norm.weight", p.head_dim, init::norm, k_sd_norm);
      vec(b + "attn_k_norm.weight", p.head_dim, init::norm, k_sd_norm);
      vec(b + "post_attention_norm.weight", p.n_embd, init::norm, k_sd_norm);
      vec(b + "post_ffw_norm.weight", p.n_embd, init::norm, k_sd_norm);
    }
    matrix(b + "attn_output.weight", q_out, p.n_embd, k_sd_matrix);
    vec(b + "ffn_norm.weight", p.n_embd, init::norm, k_sd_norm);
    matrix(b + "ffn_gate.weight", p.n_embd, p.n_ff, k_sd_matrix);
    matrix(b + "ffn_up.weight", p.n_embd, p.n_ff, k_sd_matrix);
    matrix(b + "ffn_down.weight", p.n_ff, p.n_embd, k_sd_matrix);
  }
  std::stable_sort(ts.begin(), ts.end(), [](const synth_tensor& x, const synth_tensor& y) {
    return llama_tensor_order(x.name, y.name);
  });
  return ts;
}

// splitmix64: one independent stream per (seed, tensor, row).
struct row_rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

uint64_t name_hash(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Box-Muller: two normal draws from one 64-bit value (24 bits per uniform).
void fill_normal(row_rng& g, float* x, int64_t n, float mean, float sd) {
  constexpr float two_pi = 2.0f * std::numbers::pi_v<float>;
  for (int64_t i = 0; i < n; i += 2) {
    const uint64_t v = g.next();
    const float u1 = float((v >> 40) + 1) * (1.0f / 16777216.0f);  // (0, 1]: log stays finite
    const float u2 = float(v & 0xFFFFFF) * (1.0f / 16777216.0f);
    const float r = sd * std::sqrt(-2.0f * std::log(u1));
    x[i] = mean + r * std::cos(two_pi * u2);
    if (i + 1 < n) x[i + 1] = mean + r * std::sin(two_pi * u2);
  }
}

void generate_row(const synth_tensor& t, uint64_t seed, int64_t row, float* x) {
  const int64_t n = t.dims[0];
  if (t.how == init::fixed) {
    std::copy(t.values.begin(), t.values.end(), x);
    return;
  }
  row_rng g{seed * 0x9e3779b97f4a7c15ull ^ name_hash(t.name) ^ (uint64_t(row) * 0xd1b54a32d192ed03ull)};
  g.next();
  fill_normal(g, x, n, t.how == init::norm ? 1.0f : 0.0f, t.sd);
}

}  // namespace

std::span<const synth_preset> synth_presets() { return k_presets; }

const synth_preset* find_synth_preset(std::string_view name) {
  for (const auto& p : k_presets)
    if (name == p.name) return &p;
  return nullptr;
}

result<synth_summary> synth_model(const synth_options& o, const std::string& path) {
  if (!o.preset) return make_error("synth: no preset given");
  const synth_preset& p = *o.preset;
  const int n_layer = o.n_layer.value_or(p.n_layer);
  const int64_t n_vocab_want = o.n_vocab.value_or(p.n_vocab);
  if (n_layer < 1 || n_layer > 1024) return make_error("synth: {} layers is outside 1..1024", n_layer);
  auto vocab = make_synth_vocab(n_vocab_want, o.seed);
  if (!vocab) return make_error("synth: {}", vocab.message());
  const int64_t n_vocab = int64_t(vocab->tokens.size());

  const auto tensors = make_tensors(p, n_layer, n_vocab);
  std::vector<tensor_desc> descs;
  for (const auto& t : tensors) descs.push_back({t.name, t.dims, dtype::f32});
  mix_options mix;
  mix.ftype = o.ftype;
  auto types = plan_tensor_types(descs, mix, mix_facts{n_layer, p.n_head / p.n_head_kv});
  if (!types) return make_error("synth: {}", types.message());

  std::vector<planned_tensor> plan;
  for (size_t i = 0; i < tensors.size(); ++i) plan.push_back({tensors[i].name, tensors[i].dims, (*types)[i]});
  auto out = gguf_stream_writer::create(path, make_metadata(p, n_layer, *vocab, o), plan);
  if (!out) return out.take_error();

  thread_pool pool(o.n_threads);
  synth_summary sum;
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (o.cancel && o.cancel->load()) return make_error("{}: interrupted", path);
    const synth_tensor& t = tensors[i];
    const type_traits& tt = type_info((*types)[i]);
    const int64_t ne0 = t.dims[0];
    const int64_t n_rows = t.dims.size() > 1 ? t.dims[1] : 1;
    const size_t rb = row_bytes(tt, ne0);
    buf.assign(size_t(n_rows) * rb, 0);
    status s = for_row_chunks(pool, n_rows, ne0, std::max<int64_t>(1, 16384 / ne0), [&](int64_t r0, int64_t r1, float* x) -> status {
      for (int64_t r = r0; r < r1; ++r) {
        generate_row(t, o.seed, r, x);
        tt.quantize_row(x, buf.data() + size_t(r) * rb, ne0);
      }
      return {};
    });
    if (!s) return error{s.message()};
    GLIA_TRY(out.value()->write_next(buf));
    sum.n_params += uint64_t(ne0 * n_rows);
    ++sum.n_tensors;
    if (o.log)
      o.log(fmt::format("[{:4}/{:4}] {:>36} - {:>6}, {:8.3f} MiB", i + 1, tensors.size(), t.name, tt.name,
                        double(buf.size()) / (1 << 20)));
  }
  GLIA_TRY(out.value()->finish());
  sum.bytes = out.value()->bytes_written();
  return sum;
}

}  // namespace glia
