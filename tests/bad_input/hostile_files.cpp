#include "hostile_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "test_support.h"

namespace glia::test {
namespace {

// F32 or Q8_0 data for `n` values near `base`. Q8_0 (ggml spec): blocks of 32 values as an fp16
// scale d = max|x| / 127 and 32 int8 quants; d is written as 1/128 (exact in fp16) and quants as
// round(x / d), which is all a loadable test file needs.
bytes tensor_data(uint32_t type, int64_t n, float base, std::mt19937& rng) {
  std::normal_distribution<float> nd(base, 0.1f);
  bytes out;
  if (type == 8) {
    for (int64_t b = 0; b < n / 32; ++b) {
      out.push_back(0x00);  // fp16 1/128 = 0x2000, little endian
      out.push_back(0x20);
      for (int i = 0; i < 32; ++i) out.push_back(uint8_t(int8_t(std::lround(std::clamp(nd(rng) * 128.0f, -127.0f, 127.0f)))));
    }
    return out;
  }
  out.resize(size_t(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    const float v = nd(rng);
    std::memcpy(out.data() + i * 4, &v, 4);
  }
  return out;
}

}  // namespace

gguf::writer tiny_model(const tiny_options& o) {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.context_length", uint32_t(o.n_ctx));
  w.set_u32("llama.embedding_length", uint32_t(o.n_embd));
  w.set_u32("llama.block_count", uint32_t(o.n_layer));
  w.set_u32("llama.feed_forward_length", uint32_t(o.n_ff));
  w.set_u32("llama.attention.head_count", uint32_t(o.n_head));
  w.set_u32("llama.attention.head_count_kv", uint32_t(o.n_head_kv));
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "<0xC3>", "\xE2\x96\x81",
                                               "a", "b", "c", "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab", "abc",
                                               "bc", "ca"});
  std::vector<float> scores;
  for (int i = 0; i < tiny_vocab; ++i) scores.push_back(-float(i));
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);

  std::mt19937 rng(11);
  auto add = [&](const std::string& name, std::vector<int64_t> dims, uint32_t type, float base) {
    if (name == o.skip) return;
    if (auto it = o.dims.find(name); it != o.dims.end()) dims = it->second;
    int64_t n = 1;
    for (auto d : dims) n *= d;
    bytes data = tensor_data(type, n, base, rng);
    if (name == o.poison) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(data.data() + o.poison_at * 4, &nan, 4);
    }
    EXPECT_TRUE(w.add_tensor(name, type, dims, data).is_ok()) << name;
  };
  const int64_t hd = o.n_embd / o.n_head;
  add("token_embd.weight", {o.n_embd, tiny_vocab}, o.matrix_type, 0.0f);
  add("output_norm.weight", {o.n_embd}, 0, 1.0f);
  for (int il = 0; il < o.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", {o.n_embd}, 0, 1.0f);
    add(p + "attn_q.weight", {o.n_embd, o.n_head * hd}, o.matrix_type, 0.0f);
    add(p + "attn_k.weight", {o.n_embd, o.n_head_kv * hd}, o.matrix_type, 0.0f);
    add(p + "attn_v.weight", {o.n_embd, o.n_head_kv * hd}, o.matrix_type, 0.0f);
    add(p + "attn_output.weight", {o.n_head * hd, o.n_embd}, o.matrix_type, 0.0f);
    add(p + "ffn_norm.weight", {o.n_embd}, 0, 1.0f);
    add(p + "ffn_gate.weight", {o.n_embd, o.n_ff}, o.matrix_type, 0.0f);
    add(p + "ffn_up.weight", {o.n_embd, o.n_ff}, o.matrix_type, 0.0f);
    add(p + "ffn_down.weight", {o.n_ff, o.n_embd}, o.matrix_type, 0.0f);
  }
  return w;
}

bytes to_bytes(const gguf::writer& w) {
  auto b = w.to_bytes();
  EXPECT_TRUE(b.is_ok()) << b.message();
  return b.is_ok() ? *b : bytes{};
}

void put_u32(bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.at(at + i) = uint8_t(v >> (8 * i));
}

void put_u64(bytes& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.at(at + i) = uint8_t(v >> (8 * i));
}

size_t after_string(const bytes& b, std::string_view s) {
  bytes needle(8 + s.size());
  for (int i = 0; i < 8; ++i) needle[i] = uint8_t(uint64_t(s.size()) >> (8 * i));
  std::memcpy(needle.data() + 8, s.data(), s.size());
  size_t found = 0;
  int count = 0;
  for (size_t i = 0; i + needle.size() <= b.size(); ++i)
    if (std::memcmp(b.data() + i, needle.data(), needle.size()) == 0) found = i + needle.size(), ++count;
  EXPECT_EQ(count, 1) << "string '" << s << "' occurs " << count << " times";
  return count == 1 ? found : 0;
}

tensor_fields locate_tensor(const bytes& b, std::string_view name, uint32_t n_dims) {
  const size_t p = after_string(b, name);
  return {p, p + 4, p + 4 + 8 * size_t(n_dims), p + 4 + 8 * size_t(n_dims) + 4};
}

std::string write_scratch(const std::string& name, const bytes& b) {
  const std::string path = scratch("bad_input_" + name + ".gguf");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  EXPECT_TRUE(out.good()) << path;
  return path;
}

}  // namespace glia::test
