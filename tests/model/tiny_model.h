// Builds small GGUF models in memory with the writer, for tests that need to break one thing.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/model.h"

namespace glia::test {

struct tiny_llama_spec {
  int n_vocab = 64;
  int n_embd = 32;
  int n_layer = 2;
  int n_head = 4;
  int n_head_kv = 2;
  int n_ff = 48;
  int n_ctx = 64;
  uint32_t seed = 7;
};

// A random-weight llama-architecture file (F32 tensors, SPM-free: no tokenizer keys).
inline gguf::writer make_tiny_llama(const tiny_llama_spec& s) {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.context_length", uint32_t(s.n_ctx));
  w.set_u32("llama.embedding_length", uint32_t(s.n_embd));
  w.set_u32("llama.block_count", uint32_t(s.n_layer));
  w.set_u32("llama.feed_forward_length", uint32_t(s.n_ff));
  w.set_u32("llama.attention.head_count", uint32_t(s.n_head));
  w.set_u32("llama.attention.head_count_kv", uint32_t(s.n_head_kv));
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> nd(0.0f, 0.1f);
  auto add = [&](const std::string& name, std::vector<int64_t> dims, float base) {
    int64_t n = 1;
    for (auto d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = base + nd(rng);
    auto st = w.add_tensor(name, 0, dims, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
    (void)st;
  };
  const int hd = s.n_embd / s.n_head;
  add("token_embd.weight", {s.n_embd, s.n_vocab}, 0.0f);
  add("output_norm.weight", {s.n_embd}, 1.0f);
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", {s.n_embd}, 1.0f);
    add(p + "attn_q.weight", {s.n_embd, s.n_head * hd}, 0.0f);
    add(p + "attn_k.weight", {s.n_embd, s.n_head_kv * hd}, 0.0f);
    add(p + "attn_v.weight", {s.n_embd, s.n_head_kv * hd}, 0.0f);
    add(p + "attn_output.weight", {s.n_head * hd, s.n_embd}, 0.0f);
    add(p + "ffn_norm.weight", {s.n_embd}, 1.0f);
    add(p + "ffn_gate.weight", {s.n_embd, s.n_ff}, 0.0f);
    add(p + "ffn_up.weight", {s.n_embd, s.n_ff}, 0.0f);
    add(p + "ffn_down.weight", {s.n_ff, s.n_embd}, 0.0f);
  }
  return w;
}

// A model loaded from a writer's bytes (kept alive with it), or the error that refused it.
struct loaded {
  std::vector<uint8_t> bytes;  // must outlive the model
  result<std::shared_ptr<const model>> m = error{"not loaded"};
};

inline loaded load(const gguf::writer& w) {
  loaded l;
  auto bytes = w.to_bytes();
  if (!bytes) {
    l.m = bytes.take_error();
    return l;
  }
  l.bytes = std::move(*bytes);
  auto f = gguf::file::from_memory(l.bytes);
  if (!f) {
    l.m = f.take_error();
    return l;
  }
  l.m = load_model(std::move(*f));
  return l;
}

}  // namespace glia::test
