// The attend kernel (attention_kernels.h) compiled for 64-bit ARM: 4 lanes of NEON. NEON and the
// fp16 conversions (fcvtl) are part of AArch64's base instruction set, so this file needs no flags
// and no run-time check (CMakeLists.txt builds it on aarch64 only).
#include "backend/cpu/simd_neon.h"

#include <cmath>
#include <cstdint>

#include "backend/cpu/attention_kernels.h"

namespace glia::cpu {
namespace {

struct f32x4 {
  using v = float32x4_t;
  static constexpr int W = 4;
  static v zero() { return vdupq_n_f32(0.0f); }
  static v set1(float x) { return vdupq_n_f32(x); }
  static v loadu(const float* p) { return vld1q_f32(p); }
  static v load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, v x) { vst1q_f32(p, x); }
  static v bcast(const float* p) { return vld1q_dup_f32(p); }
  static v halves(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static v fmadd(v a, v b, v c) { return vfmaq_f32(c, a, b); }
  static v mul(v a, v b) { return vmulq_f32(a, b); }
  static v sub(v a, v b) { return vsubq_f32(a, b); }
  static v add(v a, v b) { return vaddq_f32(a, b); }
  static v max(v a, v b) { return vmaxq_f32(a, b); }
  static v exp(v x) { return exp_f32x4(x); }  // simd_neon.h
  static float first(v x) { return vgetq_lane_f32(x, 0); }
  static float hmax(v x) { return vmaxvq_f32(x); }
  static float hsum(v x) { return vaddvq_f32(x); }
  static v keep_live(v x, uint64_t bits) {
    const uint32x4_t lane_bit = {1, 2, 4, 8};
    const uint32x4_t live = vtstq_u32(vdupq_n_u32(uint32_t(bits & 0xF)), lane_bit);
    return vbslq_f32(live, x, vdupq_n_f32(-INFINITY));
  }
  // 32 registers: score tiles of up to 8 query rows (a GQA group of 8 converts each K vector once)
  // x 2 vectors of slots, or 4 x 4 (16 accumulators, the K vectors and a broadcast beside them);
  // value tiles of 8 rows x 2 accumulators.
  static constexpr int score_rows = 8, score_accumulators = 16;
  static constexpr int value_rows = 8, value_vectors = 2;
  static void transpose(v r[W]) { transpose4(r); }  // simd_neon.h
};

}  // namespace

attend_fn neon_attend() { return attend<f32x4>; }

}  // namespace glia::cpu
