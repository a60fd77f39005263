// The host/device block decoders (backend/cuda/block_decode.h) against the type table, bit for bit:
// they are what CUDA kernels will use, so any difference here would be a difference in logits.
#include "backend/cuda/block_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>

#include "core/fp16.h"
#include "harness.h"
#include "quant/activation.h"
#include "quant/block_types.h"

namespace glia::test {
namespace {

std::vector<dtype> decode_types() {
  std::vector<dtype> out = weight_types();
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16})
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  return out;
}

// Index of the first element whose bits differ, or -1.
int64_t first_mismatch(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (f32_to_bits(a[i]) != f32_to_bits(b[i])) return int64_t(i);
  return -1;
}

// Decodes a row with decode32 (and decode1 for a float row's tail).
std::vector<float> decode_row(dtype t, const uint8_t* row, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  const int64_t groups = n / 32;
  for (int64_t g = 0; g < groups; ++g) cuda::decode32(t, row, g, out.data() + 32 * g);
  for (int64_t i = 32 * groups; i < n; ++i) out[size_t(i)] = cuda::decode1(t, row, i);
  return out;
}

void expect_row_matches(dtype t, const uint8_t* row, int64_t n, const std::string& what) {
  std::vector<float> want(static_cast<size_t>(n));
  type_info(t).dequantize_row(row, want.data(), n);
  const std::vector<float> got = decode_row(t, row, n);
  const int64_t i = first_mismatch(got, want);
  EXPECT_EQ(i, -1) << type_label(t) << " " << what << " n=" << n << ": element " << i << " is " << got[size_t(i)]
                   << " (bits " << std::hex << f32_to_bits(got[size_t(i)]) << "), want " << want[size_t(i)]
                   << " (bits " << f32_to_bits(want[size_t(i)]) << ")";
}

std::vector<int64_t> row_lengths(dtype t) {
  const int64_t be = type_info(t).block_elems;
  if (be == 1) return {1, 7, 31, 32, 33, 96, 100, 224, 515};
  return {be, 3 * be, 7 * be};
}

TEST(block_decode, all_table_types_supported) {
  for (dtype t : decode_types()) EXPECT_TRUE(cuda::can_decode32(t)) << type_label(t);
}

// Rows quantized by the table (magnitudes over three decades, as make_weight makes them).
TEST(block_decode, decode32_matches_dequantize_row) {
  for (dtype t : decode_types()) {
    for (int64_t n : row_lengths(t)) {
      const test_weight w = make_weight(t, n, 6, uint32_t(n) * 31u + uint32_t(t));
      for (int64_t r = 0; r < w.view.n_out; ++r) expect_row_matches(t, w.view.row(r), n, "row " + std::to_string(r));
    }
  }
}

// Random bytes reach every scale code, sign and exponent (subnormal, inf and NaN scales included)
// that a quantizer would rarely produce.
TEST(block_decode, decode32_matches_dequantize_row_on_random_bytes) {
  std::mt19937 rng(1234);
  for (dtype t : decode_types()) {
    const type_traits& tt = type_info(t);
    const int64_t n = tt.block_elems == 1 ? 515 : 7 * tt.block_elems;
    for (int rep = 0; rep < 20; ++rep) {
      // Whole floats so the rows stay aligned as a GGUF row would be.
      std::vector<uint32_t> words((row_bytes(tt, n) + 3) / 4);
      for (auto& v : words) v = rng();
      expect_row_matches(t, reinterpret_cast<const uint8_t*>(words.data()), n, "random bytes " + std::to_string(rep));
    }
  }
}

// Activation blocks with the awkward cases: zero, tiny (down to float subnormals), one huge value,
// exact ties of x * 127 / amax, and non-finite values.
std::vector<std::vector<float>> activation_blocks(size_t n) {
  std::vector<std::vector<float>> out;
  for (uint32_t s = 0; s < 40; ++s) {
    const float scale = std::pow(10.0f, float(int(s % 13)) - 6.0f);
    out.push_back(random_floats(n, 100 + s, -scale, scale));
  }
  out.push_back(std::vector<float>(n, 0.0f));
  out.push_back(std::vector<float>(n, -0.0f));
  for (float tiny : {1e-30f, 1e-38f, 1e-40f, 1e-45f}) {
    std::vector<float> v = random_floats(n, 7, -tiny, tiny);
    v[3] = tiny;
    out.push_back(v);
  }
  {
    std::vector<float> v = random_floats(n, 8);
    v[5] = 1e30f;
    out.push_back(v);
    v[5] = -3e38f;
    out.push_back(v);
    v[5] = 65519.0f;  // d just below the fp16 overflow
    out.push_back(v);
    v[5] = 65520.0f * 127.0f;  // d rounds to fp16 inf
    out.push_back(v);
  }
  {
    // amax = 127 makes x * 127 / amax = x, so k + 0.5 are exact ties (even/odd both ways).
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = (float(int(i % 64)) - 32.0f) + 0.5f;
    v[0] = -127.0f;
    out.push_back(v);
  }
  {
    std::vector<float> v = random_floats(n, 9);
    v[1] = std::numeric_limits<float>::infinity();
    out.push_back(v);
    v[1] = std::numeric_limits<float>::quiet_NaN();
    out.push_back(v);
  }
  return out;
}

template <class Block, class RoundTrip>
void check_legacy_round_trip(dtype dot, RoundTrip round_trip) {
  const quantize_row_fn quantize = quant::activation_quantizer(dot);
  int idx = 0;
  for (const std::vector<float>& x : activation_blocks(32)) {
    Block b;
    quantize(x.data(), &b, 32);
    std::vector<float> want(32), got(32);
    for (int j = 0; j < 32; ++j) want[size_t(j)] = fp16_to_f32(b.d) * float(b.qs[j]);
    round_trip(x.data(), got.data());
    const int64_t i = first_mismatch(got, want);
    EXPECT_EQ(i, -1) << type_label(dot) << " block " << idx << ": element " << i << " is " << got[size_t(i)]
                     << ", want " << want[size_t(i)];
    ++idx;
  }
}

TEST(block_decode, round_trip_q8_0_matches_activation_quantizer) {
  check_legacy_round_trip<quant::block_q8_0>(dtype::q8_0, cuda::round_trip_q8_0);
}

TEST(block_decode, round_trip_q8_1_matches_activation_quantizer) {
  check_legacy_round_trip<quant::block_q8_1>(dtype::q8_1, cuda::round_trip_q8_1);
}

TEST(block_decode, round_trip_q8_k_matches_activation_quantizer) {
  const quantize_row_fn quantize = quant::activation_quantizer(dtype::q8_k);
  int idx = 0;
  for (const std::vector<float>& x : activation_blocks(256)) {
    quant::block_q8_k b;
    quantize(x.data(), &b, 256);
    std::vector<float> want(256), got(256);
    for (int e = 0; e < 256; ++e) want[size_t(e)] = b.d * float(b.qs[e]);
    cuda::round_trip_q8_k(x.data(), got.data());
    const int64_t i = first_mismatch(got, want);
    EXPECT_EQ(i, -1) << "Q8_K block " << idx << ": element " << i << " is " << got[size_t(i)] << ", want "
                     << want[size_t(i)];
    ++idx;
  }
}

// Floats near every rounding boundary of fp16 and bf16, at every exponent, plus random bit patterns.
std::vector<float> conversion_inputs() {
  std::vector<float> out;
  const uint32_t mantissas[] = {0,      1,      0xFFF,  0x1000, 0x1001,   0x1FFF,   0x2000,   0x3000,
                                0x5000, 0x7FFF, 0x8000, 0x8001, 0x18000, 0x400000, 0x7FE000, 0x7FEFFF,
                                0x7FF000, 0x7FF001, 0x7FFFFF};
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t m : mantissas) out.push_back(bits_to_f32(sign | e << 23 | m));
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.996f, 65520.0f, 65536.0f, 6.1035156e-05f, 5.9604645e-08f,
                  2.9802322e-08f, 2.9802326e-08f, 8.940697e-08f, FLT_MAX, FLT_MIN, FLT_TRUE_MIN,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), bits_to_f32(0x7F800001u), bits_to_f32(0xFFFFFFFFu)})
    out.push_back(f);
  std::mt19937 rng(99);
  for (int i = 0; i < 1 << 20; ++i) out.push_back(bits_to_f32(rng()));
  return out;
}

TEST(block_decode, half_to_float_all_bit_patterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = cuda::half_to_float(uint16_t(h)), want = fp16_to_f32(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << "half " << h;
    } else {
      ASSERT_EQ(f32_to_bits(got), f32_to_bits(want)) << std::hex << "half " << h;
    }
    ASSERT_EQ(f32_to_bits(cuda::bf16_to_float(uint16_t(h))), f32_to_bits(bf16_to_f32(uint16_t(h))))
        << std::hex << "bf16 " << h;
  }
}

TEST(block_decode, float_to_half_and_bf16_match_core) {
  for (float f : conversion_inputs()) {
    ASSERT_EQ(cuda::float_to_half(f), f32_to_fp16(f)) << std::hex << "float bits " << f32_to_bits(f);
    ASSERT_EQ(cuda::float_to_bf16(f), f32_to_bf16(f)) << std::hex << "float bits " << f32_to_bits(f);
  }
}

// f16/bf16 activations: the table's row quantizer (what activation_quantizer returns) then decode.
TEST(block_decode, round_trip_f16_bf16_match_activation_quantizer) {
  const std::vector<float> x = conversion_inputs();
  for (dtype t : {dtype::f16, dtype::bf16}) {
    std::vector<uint16_t> stored(x.size());
    quant::activation_quantizer(t)(x.data(), stored.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = t == dtype::f16 ? fp16_to_f32(stored[i]) : bf16_to_f32(stored[i]);
      const float got = t == dtype::f16 ? cuda::round_trip_f16(x[i]) : cuda::round_trip_bf16(x[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << type_label(t) << std::hex << " float bits " << f32_to_bits(x[i]);
      } else {
        ASSERT_EQ(f32_to_bits(got), f32_to_bits(want)) << type_label(t) << std::hex << " float bits " << f32_to_bits(x[i]);
      }
    }
  }
}

}  // namespace
}  // namespace glia::test
