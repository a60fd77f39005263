// Shared helpers of the op-by-op harness: deterministic random inputs, weights of any type built
// with the type table's own quantizer, and the comparison metric.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "quant/types.h"

namespace glia::test {

// Uniform floats in [lo, hi), reproducible from the seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// sum (a - b)^2 / sum b^2: the error relative to the energy of the reference output b.
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (a.size() != b.size()) return INFINITY;
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return num / den;
}

inline bool bit_equal(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// A weight matrix of `type` quantized (by the type table's reference quantizer) from random floats.
// Row magnitudes vary over three decades, so per-block scales cover a wide range.
struct test_weight {
  std::vector<uint8_t> bytes;
  weight_view view;
};

inline test_weight make_weight(dtype type, int64_t n_in, int64_t n_out, uint32_t seed) {
  const type_traits& t = type_info(type);
  test_weight w;
  const size_t stride = row_bytes(t, n_in);
  w.bytes.resize(stride * size_t(n_out));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(-3.0f, 0.0f);
  for (int64_t r = 0; r < n_out; ++r) {
    const float scale = std::pow(10.0f, mag(rng));
    std::vector<float> row = random_floats(size_t(n_in), seed * 7919u + uint32_t(r), -scale, scale);
    t.quantize_row(row.data(), w.bytes.data() + size_t(r) * stride, n_in);
  }
  w.view = weight_view{type, n_in, n_out, w.bytes.data(), stride};
  return w;
}

// Types a weight matrix may have: a quantizer and a vec_dot exist. Includes the activation formats
// (Q8_1, Q8_K) when the table gives them a dot; they go through the same matmul path.
inline std::vector<dtype> weight_types() {
  std::vector<dtype> out;
  for (const type_traits& t : all_types())
    if (t.quantize_row && t.vec_dot && t.dequantize_row) out.push_back(t.type);
  return out;
}

// Awkward sizes for a type: odd lengths for float types, odd block counts for block types.
inline std::vector<int64_t> awkward_n_in(dtype type) {
  const int64_t be = type_info(type).block_elems;
  if (be == 1) return {1, 7, 33, 100, 515};
  return {be, 3 * be, 7 * be};
}

inline std::string type_label(dtype t) { return type_info(t).name; }

}  // namespace glia::test
