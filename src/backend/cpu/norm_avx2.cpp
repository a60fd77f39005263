// AVX2 sum of squares for rms_norm (cpu_kernels.h sum_of_squares_fn). ref::sum_of_squares's sixteen
// partial sums are the lanes of four double vectors (element i in lane i % 16), combined in its
// order, so the bits are the reference's; ref::rms_norm_row does the rest of the row.
#include "backend/cpu/simd_avx2.h"
// (simd_avx2.h first: it must not see anything compiled differently before it.)

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

// The squares of 8 floats (each rounded to float, as the reference) into partial sums lo (lanes
// i % 16 = 0-3 or 8-11) and hi (4-7 or 12-15).
inline void add_squares(__m256 v, __m256d& lo, __m256d& hi) {
  const __m256 sq = _mm256_mul_ps(v, v);
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
}

// Up to 8 floats from x, zeros past n (adding +0.0 leaves a partial sum of squares unchanged).
inline __m256 load_tail(const float* x, int64_t n) {
  alignas(32) float t[8] = {};
  for (int64_t i = 0; i < n; ++i) t[i] = x[i];
  return _mm256_load_ps(t);
}

double sum_of_squares_avx2(const float* x, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s4 = s0, s8 = s0, s12 = s0;  // partial sums j..j+3
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    add_squares(_mm256_loadu_ps(x + i), s0, s4);
    add_squares(_mm256_loadu_ps(x + i + 8), s8, s12);
  }
  if (i < n) add_squares(n - i >= 8 ? _mm256_loadu_ps(x + i) : load_tail(x + i, n - i), s0, s4);
  if (i + 8 < n) add_squares(load_tail(x + i + 8, n - i - 8), s8, s12);
  // d_j = (s_j + s_j+8) + (s_j+4 + s_j+12), then (d0 + d2) + (d1 + d3).
  const __m256d d = _mm256_add_pd(_mm256_add_pd(s0, s8), _mm256_add_pd(s4, s12));
  const __m128d e = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
  return _mm_cvtsd_f64(_mm_add_sd(e, _mm_unpackhi_pd(e, e)));
}

}  // namespace

sum_of_squares_fn avx2_sum_of_squares() { return sum_of_squares_avx2; }

}  // namespace glia::cpu
