// Helpers shared by the quant tests: synthetic data as llama.cpp's test-quantize-fns makes it, and
// whole-row quantize / dequantize through the type table.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "quant/types.h"

namespace glia::test {

// IQ4_NL levels as published in ggml-common.h (kvalues_iq4nl), written out independently of src/quant.
inline constexpr int k_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// x_i = 0.1 + amplitude * cos(i + offset), the data of llama.cpp's tests/test-quantize-fns.cpp.
inline std::vector<float> cosine_data(float offset, int64_t n, float amplitude = 2.0f) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(0.1 + amplitude * std::cos(float(i) + offset));
  return x;
}

inline std::vector<uint8_t> quantize(const type_traits& t, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(t, int64_t(x.size())));
  t.quantize_row(x.data(), q.data(), int64_t(x.size()));
  return q;
}

inline std::vector<float> dequantize(const type_traits& t, const uint8_t* q, int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  t.dequantize_row(q, x.data(), n);
  return x;
}

inline std::vector<float> dequantize(const type_traits& t, const std::vector<uint8_t>& q, int64_t n) {
  return dequantize(t, q.data(), n);
}

inline double sum_sq_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    s += d * d;
  }
  return s;
}

inline double rms(const std::vector<float>& a) {
  double s = 0;
  for (float v : a) s += double(v) * v;
  return a.empty() ? 0 : std::sqrt(s / double(a.size()));
}

// For gtest parameter names: "Q4_K" etc. are valid identifiers.
inline std::string type_param_name(const type_traits& t) { return t.name; }

}  // namespace glia::test
