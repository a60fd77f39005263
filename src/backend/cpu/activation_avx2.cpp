// AVX2 glu (cpu_kernels.h glu_fn), 8 elements per step. SiLU is x / (1 + e^-x) with the vector exp
// of simd_avx2.h in place of std::exp (the scalar loop's cost in a 1B model was ~3% of prefill and
// ~1% of decode, mostly the libm call); GELU looks the fp16-rounded input up in the reference's own
// table with a gather, so its bits are the reference's. A tail of fewer than 8 elements goes through
// the same vector code (padded), so an element's bits never depend on where a thread's range ends.
#include "backend/cpu/simd_avx2.h"
// (simd_avx2.h first: it must not see anything compiled differently before it.)

#include "backend/cpu/cpu_kernels.h"
#include "backend/ref/ref_ops.h"

namespace glia::cpu {
namespace {

inline __m256 silu8(__m256 x) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// ref::activate's GELU: 0 at or below -10, x at or above 10, else the table entry of fp16(x)
// (round to nearest even, as core/fp16.h's conversion).
inline __m256 gelu8(__m256 x, const float* table) {
  const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  __m256 g = _mm256_i32gather_ps(table, h, 4);
  g = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-10.0f), _CMP_LE_OQ), g);
  return _mm256_blendv_ps(g, x, _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
}

template <class Act>
void glu_loop(const float* gate, const float* up, float* out, int64_t n, Act act8) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(act8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  if (i == n) return;
  alignas(32) float g[8] = {}, u[8] = {}, o[8];
  for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
  _mm256_store_ps(o, _mm256_mul_ps(act8(_mm256_load_ps(g)), _mm256_load_ps(u)));
  for (int64_t j = i; j < n; ++j) out[j] = o[j - i];
}

void glu_avx2(const float* gate, const float* up, float* out, int64_t n, activation act) {
  if (act == activation::silu) {
    glu_loop(gate, up, out, n, silu8);
  } else {
    const float* table = ref::gelu_fp16_table();
    glu_loop(gate, up, out, n, [table](__m256 x) { return gelu8(x, table); });
  }
}

}  // namespace

glu_fn avx2_glu() { return glu_avx2; }

}  // namespace glia::cpu
