// Small NEON helpers shared by the *_neon.cpp files, and only by them (internal linkage, as
// simd_avx2.h's). NEON is part of AArch64's base instruction set: no flags, no run-time check.
#pragma once

#include <arm_neon.h>

#include <cmath>
#include <initializer_list>

namespace glia::cpu {
namespace {  // NOLINT(google-build-namespaces): internal linkage, as simd_avx2.h

// e^x lane-wise, the steps of exp_ps (simd_avx2.h) in the same order with the same constants: 0 below
// -87, +inf above 88, NaN for NaN; x = n ln2 + r (ln2 in two parts), e^r by its Taylor polynomial of
// degree 7, 2^n through the exponent bits.
inline float32x4_t exp_f32x4(float32x4_t x) {
  const float32x4_t x0 = x;
  const uint32x4_t keep = vcgeq_f32(x, vdupq_n_f32(-87.0f));  // false for NaN
  const uint32x4_t overflow = vmvnq_u32(vcleq_f32(x, vdupq_n_f32(88.0f)));  // above 88, or NaN
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));  // x - n ln2 (high part, exact)
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));           // ln2 - high part
  float32x4_t p = vdupq_n_f32(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = vfmaq_f32(vdupq_n_f32(c), p, r);
  const int32x4_t scale = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
  const float32x4_t e = vmulq_f32(p, vreinterpretq_f32_s32(scale));
  const float32x4_t kept = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e), keep));
  return vbslq_f32(overflow, vmulq_f32(x0, vdupq_n_f32(INFINITY)), kept);  // +inf, or the NaN
}

// r[i] lane k becomes r[k] lane i.
inline void transpose4(float32x4_t r[4]) {
  const float64x2_t t0 = vreinterpretq_f64_f32(vtrn1q_f32(r[0], r[1]));  // r0[0] r1[0] r0[2] r1[2]
  const float64x2_t t1 = vreinterpretq_f64_f32(vtrn2q_f32(r[0], r[1]));  // r0[1] r1[1] r0[3] r1[3]
  const float64x2_t t2 = vreinterpretq_f64_f32(vtrn1q_f32(r[2], r[3]));
  const float64x2_t t3 = vreinterpretq_f64_f32(vtrn2q_f32(r[2], r[3]));
  r[0] = vreinterpretq_f32_f64(vtrn1q_f64(t0, t2));
  r[1] = vreinterpretq_f32_f64(vtrn1q_f64(t1, t3));
  r[2] = vreinterpretq_f32_f64(vtrn2q_f64(t0, t2));
  r[3] = vreinterpretq_f32_f64(vtrn2q_f64(t1, t3));
}

}  // namespace
}  // namespace glia::cpu
