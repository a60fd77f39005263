// NEON sum of squares for rms_norm (cpu_kernels.h sum_of_squares_fn), as norm_avx2.cpp:
// ref::sum_of_squares's sixteen partial sums are the lanes of eight double vectors (element i in
// lane i % 16), combined in its order, so the bits are the reference's; ref::rms_norm_row does the
// rest of the row.
#include "backend/cpu/simd_neon.h"

#include <cstdint>

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

// The squares of 4 floats (each rounded to float, as the reference) into the partial sums of
// lanes j, j + 1 (lo) and j + 2, j + 3 (hi).
inline void add_squares(float32x4_t v, float64x2_t& lo, float64x2_t& hi) {
  const float32x4_t sq = vmulq_f32(v, v);
  lo = vaddq_f64(lo, vcvt_f64_f32(vget_low_f32(sq)));
  hi = vaddq_f64(hi, vcvt_high_f64_f32(sq));
}

// Up to 4 floats from x, zeros past n (adding +0.0 leaves a partial sum of squares unchanged).
inline float32x4_t load_tail(const float* x, int64_t n) {
  float t[4] = {};
  for (int64_t i = 0; i < n; ++i) t[i] = x[i];
  return vld1q_f32(t);
}

double sum_of_squares_neon(const float* x, int64_t n) {
  float64x2_t s[8];  // s[k]: the partial sums of lanes 2k, 2k + 1
  for (float64x2_t& v : s) v = vdupq_n_f64(0.0);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int q = 0; q < 4; ++q) add_squares(vld1q_f32(x + i + 4 * q), s[2 * q], s[2 * q + 1]);
  for (int q = 0; i + 4 * q < n; ++q) {
    const int64_t left = n - i - 4 * q;
    add_squares(left >= 4 ? vld1q_f32(x + i + 4 * q) : load_tail(x + i + 4 * q, left), s[2 * q], s[2 * q + 1]);
  }
  // d_j = (s_j + s_j+8) + (s_j+4 + s_j+12) for j = 0, 1 and 2, 3; then (d0 + d2) + (d1 + d3).
  const float64x2_t d01 = vaddq_f64(vaddq_f64(s[0], s[4]), vaddq_f64(s[2], s[6]));
  const float64x2_t d23 = vaddq_f64(vaddq_f64(s[1], s[5]), vaddq_f64(s[3], s[7]));
  const float64x2_t e = vaddq_f64(d01, d23);
  return vgetq_lane_f64(e, 0) + vgetq_lane_f64(e, 1);
}

}  // namespace

sum_of_squares_fn neon_sum_of_squares() { return sum_of_squares_neon; }

}  // namespace glia::cpu
