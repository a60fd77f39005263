// NEON glu (cpu_kernels.h glu_fn), 4 elements per step, as activation_avx2.cpp: SiLU is
// x / (1 + e^-x) with the vector exp of simd_neon.h in place of std::exp; GELU looks the
// fp16-rounded input up in the reference's own table (NEON has no gather: four scalar loads), so
// its bits are the reference's. A tail of fewer than 4 elements goes through the same vector code
// (padded), so an element's bits never depend on where a thread's range ends.
#include "backend/cpu/simd_neon.h"

#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "backend/ref/ref_ops.h"

namespace glia::cpu {
namespace {

inline float32x4_t silu4(float32x4_t x) {
  const float32x4_t e = exp_f32x4(vsubq_f32(vdupq_n_f32(0.0f), x));
  return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e));
}

// ref::activate's GELU: 0 at or below -10, x at or above 10, else the table entry of fp16(x)
// (fcvtn rounds to nearest even, as core/fp16.h's conversion; NaN stays a NaN, which the
// comparisons below pass through to its table entry, as on x86).
inline float32x4_t gelu4(float32x4_t x, const float* table) {
  uint16_t h[4];
  vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(x)));
  const float g4[4] = {table[h[0]], table[h[1]], table[h[2]], table[h[3]]};
  float32x4_t g = vld1q_f32(g4);
  g = vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(g), vcleq_f32(x, vdupq_n_f32(-10.0f))));
  return vbslq_f32(vcgeq_f32(x, vdupq_n_f32(10.0f)), x, g);
}

template <class Act>
void glu_loop(const float* gate, const float* up, float* out, int64_t n, Act act4) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vmulq_f32(act4(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  if (i == n) return;
  float g[4] = {}, u[4] = {}, o[4];
  for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
  vst1q_f32(o, vmulq_f32(act4(vld1q_f32(g)), vld1q_f32(u)));
  for (int64_t j = i; j < n; ++j) out[j] = o[j - i];
}

void glu_neon(const float* gate, const float* up, float* out, int64_t n, activation act) {
  if (act == activation::silu) {
    glu_loop(gate, up, out, n, silu4);
  } else {
    const float* table = ref::gelu_fp16_table();
    glu_loop(gate, up, out, n, [table](float32x4_t x) { return gelu4(x, table); });
  }
}

}  // namespace

glu_fn neon_glu() { return glu_neon; }

}  // namespace glia::cpu
