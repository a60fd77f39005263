// F32, F16 and BF16 rows. A dot product is float_dot_segments float chains sum = fma(w, a, sum)
// over contiguous segments of the row, the chains' sums then added in order (quant/types.h): the
// order the SIMD kernels reproduce lane for lane with one FMA per product, as the reference
// engine's SIMD dot products accumulate in float. F16 and BF16 weights meet activations of their
// own type, so the FMA's product is exact and only the sum rounds.
#include <cmath>
#include <cstring>
#include <utility>

#include "core/fp16.h"
#include "quant/ref_kernels.h"
#include "quant/types.h"

namespace glia::quant {

namespace {
// sum_i w(i) a(i) in float_dot_segments float FMA chains, added in order (quant/types.h).
template <class Elements>
float segmented_dot(int64_t n, Elements elements) {
  float total = 0;
  for (int s = 0; s < float_dot_segments; ++s) {
    float sum = 0;
    for (int64_t i = float_dot_segment(n, s); i < float_dot_segment(n, s + 1); ++i) {
      const auto [w, a] = elements(i);
      sum = std::fma(w, a, sum);
    }
    total += sum;
  }
  return total;
}
}  // namespace

void dequantize_row_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void quantize_row_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }

float vec_dot_f32(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const float*>(w);
  const auto* y = static_cast<const float*>(a);
  return segmented_dot(n, [&](int64_t i) { return std::pair{x[i], y[i]}; });
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(x[i]);
}

void quantize_row_f16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(src[i]);
}

float vec_dot_f16(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  return segmented_dot(n, [&](int64_t i) { return std::pair{fp16_to_f32(x[i]), fp16_to_f32(y[i])}; });
}

void dequantize_row_bf16(const void* src, float* dst, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(x[i]);
}

void quantize_row_bf16(const float* src, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(src[i]);
}

float vec_dot_bf16(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  return segmented_dot(n, [&](int64_t i) { return std::pair{bf16_to_f32(x[i]), bf16_to_f32(y[i])}; });
}

}  // namespace glia::quant
