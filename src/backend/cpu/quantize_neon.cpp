// NEON activation quantizers: bit-exact twins of the scalar reference routines, as kernels_avx2.cpp's
// (Q8_0 in both roundings, Q8_1, Q8_K, F16). Blocks holding a NaN or an infinity go to the reference
// (its handling of them is not worth mirroring). NEON is part of AArch64's base instruction set, so
// this file needs no flags (CMakeLists.txt builds it on aarch64 only).
#include "backend/cpu/simd_neon.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/cpu_kernels.h"
#include "core/fp16.h"
#include "quant/activation.h"
#include "quant/block_types.h"

namespace glia::cpu {
namespace {

using quant::block_q8_0;
using quant::block_q8_1;
using quant::block_q8_k;

// All-ones in the lanes where |v| is finite: |v| < inf (false for NaN).
inline uint32x4_t finite_lanes(float32x4_t v) { return vcltq_f32(vabsq_f32(v), vdupq_n_f32(INFINITY)); }

// 16 int32 (each within int8 range) as int8, in order.
inline int8x16_t narrow16(const int32x4_t q[4]) {
  const int16x8_t lo = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
  const int16x8_t hi = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
  return vcombine_s8(vmovn_s16(lo), vmovn_s16(hi));
}

inline bool all_finite(const float32x4_t* v, int n) {
  uint32x4_t ok = vdupq_n_u32(~0u);
  for (int i = 0; i < n; ++i) ok = vandq_u32(ok, finite_lanes(v[i]));
  return vminvq_u32(ok) != 0;
}

// Q8_0 blocks: d = amax / 127; q = round(x * id) clamped to [-127, 127] (NaN, from 0 * an id that
// overflowed for a subnormal amax, to 0: the conversions give 0 for NaN and saturate infinities).
// The table's routine (ggml's quantize_row_q8_0_ref) uses id = 1 / d and roundf (ties away: fcvtas);
// the x86 variant id = 127 / amax and round-half-even (fcvtns). Q8_1 blocks (x86 variant only)
// add s = fp16(d * float(sum q)), with the unrounded d.
template <bool x86, class Block = block_q8_0>
void quantize_q8_0(const float* src, void* dst, int64_t n) {
  constexpr bool q8_1 = std::is_same_v<Block, block_q8_1>;
  static_assert(!q8_1 || x86);
  auto* out = static_cast<Block*>(dst);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* x = src + 32 * b;
    float32x4_t v[8];
    for (int i = 0; i < 8; ++i) v[i] = vld1q_f32(x + 4 * i);
    if (!all_finite(v, 8)) {
      if constexpr (q8_1)
        quant::quantize_row_q8_1_x86(x, out + b, 32);
      else if (x86)
        quant::quantize_row_q8_0_x86(x, out + b, 32);
      else
        type_info(dtype::q8_0).quantize_row(x, out + b, 32);
      continue;
    }
    float32x4_t m = vabsq_f32(v[0]);
    for (int i = 1; i < 8; ++i) m = vmaxq_f32(m, vabsq_f32(v[i]));
    const float amax = vmaxvq_f32(m);
    const float d = amax / 127.0f;
    const float id = x86 ? (amax != 0.0f ? 127.0f / amax : 0.0f) : (d != 0.0f ? 1.0f / d : 0.0f);
    int32x4_t q[8];
    for (int i = 0; i < 8; ++i) {
      const float32x4_t r = vmulq_f32(v[i], vdupq_n_f32(id));
      const int32x4_t qi = x86 ? vcvtnq_s32_f32(r) : vcvtaq_s32_f32(r);
      q[i] = vminq_s32(vmaxq_s32(qi, vdupq_n_s32(-127)), vdupq_n_s32(127));
    }
    for (int h = 0; h < 2; ++h) vst1q_s8(out[b].qs + 16 * h, narrow16(q + 4 * h));
    out[b].d = f32_to_fp16(d);
    if constexpr (q8_1) {
      int32x4_t s = q[0];
      for (int i = 1; i < 8; ++i) s = vaddq_s32(s, q[i]);
      out[b].s = f32_to_fp16(d * float(vaddvq_s32(s)));
    }
  }
}

void quantize_q8_0_table(const float* src, void* dst, int64_t n) { quantize_q8_0<false>(src, dst, n); }
void quantize_q8_0_x86(const float* src, void* dst, int64_t n) { quantize_q8_0<true>(src, dst, n); }
void quantize_q8_1_x86(const float* src, void* dst, int64_t n) { quantize_q8_0<true, block_q8_1>(src, dst, n); }

// Q8_K blocks of 256 (the table's routine): the signed peak (first element of largest magnitude)
// maps to -127, iscale = -127 / peak, q = min(127, round-half-even(iscale * x)), d = 1 / iscale,
// and bsums holds the sum of each 16 quants.
void quantize_q8_k(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<block_q8_k*>(dst);
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* x = src + 256 * b;
    float32x4_t m = vdupq_n_f32(0.0f);
    uint32x4_t ok = vdupq_n_u32(~0u);
    for (int i = 0; i < 64; ++i) {
      const float32x4_t v = vld1q_f32(x + 4 * i);
      ok = vandq_u32(ok, finite_lanes(v));
      m = vmaxq_f32(m, vabsq_f32(v));
    }
    if (vminvq_u32(ok) == 0) {
      type_info(dtype::q8_k).quantize_row(x, out + b, 256);
      continue;
    }
    const float amax = vmaxvq_f32(m);
    if (amax == 0.0f) {
      std::memset(&out[b], 0, sizeof(out[b]));
      continue;
    }
    int first = 0;
    while (std::fabs(x[first]) != amax) ++first;
    const float iscale = -127.0f / x[first];
    if (!std::isfinite(iscale)) {  // a peak so small that -127 / peak overflows: the reference's
                                    // integer trick meets infinities
      type_info(dtype::q8_k).quantize_row(x, out + b, 256);
      continue;
    }
    for (int g = 0; g < 16; ++g) {
      int32x4_t q[4];
      for (int j = 0; j < 4; ++j)
        q[j] = vminq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 16 * g + 4 * j), vdupq_n_f32(iscale))), vdupq_n_s32(127));
      vst1q_s8(out[b].qs + 16 * g, narrow16(q));
      out[b].bsums[g] = int16_t(vaddvq_s32(vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3]))));
    }
    out[b].d = 1.0f / iscale;
  }
}

// F16 (the table's routine, round to nearest even): fcvtn does the same conversion, including
// subnormals and overflow to infinity.
void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t v = vld1q_f32(src + i);
    if (!all_finite(&v, 1)) {
      type_info(dtype::f16).quantize_row(src + i, out + i, 4);
      continue;
    }
    vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(v)));
  }
  if (i < n) type_info(dtype::f16).quantize_row(src + i, out + i, n - i);
}

constexpr quantize_entry neon_quantizer_list[] = {
    {act_quantizer::q8_0, quantize_q8_0_table},
    {act_quantizer::q8_0_x86, quantize_q8_0_x86},
    {act_quantizer::q8_1_x86, quantize_q8_1_x86},
    {act_quantizer::q8_k, quantize_q8_k},
    {act_quantizer::f16, quantize_f16},
};

}  // namespace

std::span<const quantize_entry> neon_quantizers() { return neon_quantizer_list; }

}  // namespace glia::cpu
