// Reference (scalar) routines behind the type table, one group per file. Internal to quant/:
// everything else reaches them through type_traits (quant/types.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace glia::quant {

// Round to nearest, ties to even, by adding 1.5 * 2^23: the float adder does the rounding and the
// integer sits in the low mantissa bits. Valid for |x| < 2^22; this is the rounding ggml's
// k-quant code uses, so results match it on ties. Never UB, even for NaN (gives garbage instead).
inline int nearest_int(float x) {
  const float v = x + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// Groups whose largest magnitude is below this are treated as all zero (as ggml does), so scale
// searches never divide by a denormal.
inline constexpr float group_max_eps = 1e-15f;

// Float types.
void dequantize_row_f32(const void* src, float* dst, int64_t n);
void quantize_row_f32(const float* src, void* dst, int64_t n);
float vec_dot_f32(const void* w, const void* a, int64_t n);
void dequantize_row_f16(const void* src, float* dst, int64_t n);
void quantize_row_f16(const float* src, void* dst, int64_t n);
float vec_dot_f16(const void* w, const void* a, int64_t n);
void dequantize_row_bf16(const void* src, float* dst, int64_t n);
void quantize_row_bf16(const float* src, void* dst, int64_t n);
float vec_dot_bf16(const void* w, const void* a, int64_t n);

// Blocks of 32 ("legacy" quants).
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
float vec_dot_q4_0_q8_0(const void* w, const void* a, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
float vec_dot_q4_1_q8_1(const void* w, const void* a, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
float vec_dot_q5_0_q8_0(const void* w, const void* a, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
float vec_dot_q5_1_q8_1(const void* w, const void* a, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
float vec_dot_q8_0_q8_0(const void* w, const void* a, int64_t n);
void dequantize_row_q8_1(const void* src, float* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
float vec_dot_q8_1_q8_1(const void* w, const void* a, int64_t n);

// Super-blocks of 256 (k-quants).
void dequantize_row_q2_k(const void* src, float* dst, int64_t n);
void quantize_row_q2_k(const float* src, void* dst, int64_t n);
float vec_dot_q2_k_q8_k(const void* w, const void* a, int64_t n);
void dequantize_row_q3_k(const void* src, float* dst, int64_t n);
void quantize_row_q3_k(const float* src, void* dst, int64_t n);
float vec_dot_q3_k_q8_k(const void* w, const void* a, int64_t n);
void dequantize_row_q4_k(const void* src, float* dst, int64_t n);
void quantize_row_q4_k(const float* src, void* dst, int64_t n);
float vec_dot_q4_k_q8_k(const void* w, const void* a, int64_t n);
void dequantize_row_q5_k(const void* src, float* dst, int64_t n);
void quantize_row_q5_k(const float* src, void* dst, int64_t n);
float vec_dot_q5_k_q8_k(const void* w, const void* a, int64_t n);
void dequantize_row_q6_k(const void* src, float* dst, int64_t n);
void quantize_row_q6_k(const float* src, void* dst, int64_t n);
float vec_dot_q6_k_q8_k(const void* w, const void* a, int64_t n);
void dequantize_row_q8_k(const void* src, float* dst, int64_t n);
void quantize_row_q8_k(const float* src, void* dst, int64_t n);
float vec_dot_q8_k_q8_k(const void* w, const void* a, int64_t n);

// Non-linear 4-bit.
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void quantize_row_iq4_nl(const float* src, void* dst, int64_t n);
float vec_dot_iq4_nl_q8_0(const void* w, const void* a, int64_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n);
float vec_dot_iq4_xs_q8_k(const void* w, const void* a, int64_t n);

}  // namespace glia::quant
