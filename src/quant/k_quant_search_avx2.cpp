// The quantizers' scale searches for 8 groups at once, one group per lane of an AVX2 vector:
// fit_affine (Q4_K, Q5_K, Q2_K), fit_symmetric_weighted (Q6_K), fit_symmetric_refined (Q3_K) and
// fit_iq4_group (IQ4_NL, IQ4_XS). Every lane runs the scalar search's operations in the scalar
// search's order, so codes, scales and minimums are bit-identical to 8 calls of the scalar search
// (k_quant_search.cpp, iq4.cpp), and quantized files to those the scalar code writes. The quant
// layer is compiled with -ffp-contract=off (no FMA, also under GLIA_NATIVE: both sides round every
// product before its sum), this file with -mavx2, and it is called only where the CPU has AVX2
// (the *_groups dispatchers).
#include <immintrin.h>

#include <cstdint>

#include "quant/block_types.h"
#include "quant/k_quant_search.h"
#include "quant/ref_kernels.h"

namespace glia::quant {
namespace {

// nearest_int (ref_kernels.h) lane for lane: round to nearest even by the 1.5 * 2^23 shift.
__m256i nearest_int8(__m256 v) {
  const __m256i bits = _mm256_castps_si256(_mm256_add_ps(v, _mm256_set1_ps(12582912.0f)));
  return _mm256_sub_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x00400000));
}

// clamp(nearest_int(iscale * (x - offset)), 0, nmax) as floats.
__m256 affine_code(__m256 x, __m256 iscale, __m256 offset, __m256i nmax) {
  const __m256i q = nearest_int8(_mm256_mul_ps(iscale, _mm256_sub_ps(x, offset)));
  return _mm256_cvtepi32_ps(_mm256_min_epi32(_mm256_max_epi32(q, _mm256_setzero_si256()), nmax));
}

// sum_i w_i * e(scale * l_i + offset - x_i), e = |.| (mad) or square, in element order.
__m256 affine_error(const __m256* x, const __m256* w, const __m256* l, int n, __m256 scale, __m256 offset, bool use_mad) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 err = _mm256_setzero_ps();
  for (int i = 0; i < n; ++i) {
    __m256 diff = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(scale, l[i]), offset), x[i]);
    diff = use_mad ? _mm256_andnot_ps(sign, diff) : _mm256_mul_ps(diff, diff);
    err = _mm256_add_ps(err, _mm256_mul_ps(w[i], diff));
  }
  return err;
}

// Element i of the 8 groups (group g at x + g * n) in the lanes of v[i].
void load_groups(const float* x, int n, __m256* v) {
  for (int i = 0; i < n; ++i) {
    alignas(32) float lanes[8];
    for (int g = 0; g < 8; ++g) lanes[g] = x[g * n + i];
    v[i] = _mm256_load_ps(lanes);
  }
}

// clamp(nearest_int(iscale * x), -nmax, nmax - 1) as floats (symmetric_code).
__m256 symmetric_code(__m256 x, __m256 iscale, int nmax) {
  const __m256i q = nearest_int8(_mm256_mul_ps(iscale, x));
  return _mm256_cvtepi32_ps(_mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(-nmax)), _mm256_set1_epi32(nmax - 1)));
}

// The groups of the symmetric and IQ4 searches: elements in lanes, their weights x^2, the signed
// peak (the first element of the largest magnitude: signed_peak) and which groups are empty
// (magnitude below group_max_eps: codes 0, scale 0).
struct symmetric_groups {
  __m256 x[qk_max_group]{}, w[qk_max_group]{};  // (zeroed: GCC cannot see that n <= qk_max_group)
  __m256 peak, empty;

  symmetric_groups(const float* src, int n) {
    load_groups(src, n, x);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 amax = _mm256_setzero_ps();
    peak = _mm256_setzero_ps();
    for (int i = 0; i < n; ++i) {
      const __m256 ax = _mm256_andnot_ps(sign, x[i]);
      const __m256 larger = _mm256_cmp_ps(ax, amax, _CMP_GT_OQ);
      amax = _mm256_blendv_ps(amax, ax, larger);
      peak = _mm256_blendv_ps(peak, x[i], larger);
      w[i] = _mm256_mul_ps(x[i], x[i]);
    }
    empty = _mm256_cmp_ps(amax, _mm256_set1_ps(group_max_eps), _CMP_LT_OQ);
  }

  // The groups' scales, 0 for empty groups.
  void store_scales(__m256 scale, float* scale_out) const {
    _mm256_storeu_ps(scale_out, _mm256_blendv_ps(scale, _mm256_setzero_ps(), empty));
  }
  // The codes l + nmax at L[g * n + i], 0 for empty groups.
  void store_codes(const __m256* l, int n, int nmax, int8_t* L) const {
    alignas(32) float e[8];
    _mm256_store_ps(e, empty);
    for (int i = 0; i < n; ++i) {
      alignas(32) float c[8];
      _mm256_store_ps(c, l[i]);
      for (int g = 0; g < 8; ++g) L[g * n + i] = e[g] != 0.0f ? int8_t(0) : int8_t(nmax + int(c[g]));
    }
  }
};

// The symmetric codes of iscale in l, and the weighted sums of the fit x ~ scale * l (weights x^2):
// sumlx = sum w x l, suml2 = sum w l l, in element order.
void symmetric_sums(const symmetric_groups& grp, int n, int nmax, __m256 iscale, __m256* l, __m256& sumlx, __m256& suml2) {
  sumlx = _mm256_setzero_ps();
  suml2 = _mm256_setzero_ps();
  for (int i = 0; i < n; ++i) {
    l[i] = symmetric_code(grp.x[i], iscale, nmax);
    sumlx = _mm256_add_ps(sumlx, _mm256_mul_ps(_mm256_mul_ps(grp.w[i], grp.x[i]), l[i]));
    suml2 = _mm256_add_ps(suml2, _mm256_mul_ps(_mm256_mul_ps(grp.w[i], l[i]), l[i]));
  }
}

}  // namespace

void fit_symmetric_weighted_x8(int n, int nmax, const float* x, int8_t* L, float* scale_out) {
  const symmetric_groups grp(x, n);
  const __m256 peak = grp.peak;
  __m256 best_l[qk_max_group];
  __m256 sumlx, suml2;
  symmetric_sums(grp, n, nmax, _mm256_div_ps(_mm256_set1_ps(float(-nmax)), peak), best_l, sumlx, suml2);
  const __m256 nonzero = _mm256_cmp_ps(suml2, _mm256_setzero_ps(), _CMP_NEQ_UQ);
  __m256 scale = _mm256_and_ps(nonzero, _mm256_div_ps(sumlx, suml2));
  __m256 best = _mm256_mul_ps(scale, sumlx);
  __m256 trial[qk_max_group];
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    const __m256 iscale = _mm256_div_ps(_mm256_set1_ps(-(float(nmax) + 0.1f * float(step))), peak);
    symmetric_sums(grp, n, nmax, iscale, trial, sumlx, suml2);
    const __m256 better = _mm256_and_ps(_mm256_cmp_ps(suml2, _mm256_setzero_ps(), _CMP_GT_OQ),
                                        _mm256_cmp_ps(_mm256_mul_ps(sumlx, sumlx), _mm256_mul_ps(best, suml2), _CMP_GT_OQ));
    if (_mm256_movemask_ps(better) == 0) continue;
    for (int i = 0; i < n; ++i) best_l[i] = _mm256_blendv_ps(best_l[i], trial[i], better);
    scale = _mm256_blendv_ps(scale, _mm256_div_ps(sumlx, suml2), better);
    best = _mm256_blendv_ps(best, _mm256_mul_ps(scale, sumlx), better);
  }
  grp.store_scales(scale, scale_out);
  grp.store_codes(best_l, n, nmax, L);
}

void fit_symmetric_refined_x8(int n, int nmax, const float* x, int8_t* L, float* scale_out) {
  const symmetric_groups grp(x, n);
  const __m256* xv = grp.x;
  const __m256* w = grp.w;
  const __m256 zero = _mm256_setzero_ps();
  __m256 l[qk_max_group]{};
  __m256 sumlx, suml2;
  symmetric_sums(grp, n, nmax, _mm256_div_ps(_mm256_set1_ps(float(-nmax)), grp.peak), l, sumlx, suml2);
  // Coordinate descent as the scalar search: a sweep that changes nothing in a group leaves it as
  // it was, so sweeping on while any group still changes gives each group the scalar's result.
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int sweep = 0; sweep < 5; ++sweep) {
    __m256 changed = zero;
    for (int i = 0; i < n; ++i) {
      const __m256 wx = _mm256_mul_ps(w[i], xv[i]);
      __m256 slx = _mm256_sub_ps(sumlx, _mm256_mul_ps(wx, l[i]));
      const __m256 positive = _mm256_cmp_ps(slx, zero, _CMP_GT_OQ);
      if (_mm256_movemask_ps(positive) == 0) continue;
      __m256 sl2 = _mm256_sub_ps(suml2, _mm256_mul_ps(_mm256_mul_ps(w[i], l[i]), l[i]));
      const __m256 new_l = symmetric_code(_mm256_div_ps(_mm256_mul_ps(xv[i], sl2), slx), one, nmax);
      const __m256 moved = _mm256_and_ps(positive, _mm256_cmp_ps(new_l, l[i], _CMP_NEQ_UQ));
      slx = _mm256_add_ps(slx, _mm256_mul_ps(wx, new_l));
      sl2 = _mm256_add_ps(sl2, _mm256_mul_ps(_mm256_mul_ps(w[i], new_l), new_l));
      const __m256 gain = _mm256_cmp_ps(_mm256_mul_ps(_mm256_mul_ps(slx, slx), suml2),
                                        _mm256_mul_ps(_mm256_mul_ps(sumlx, sumlx), sl2), _CMP_GT_OQ);
      const __m256 take = _mm256_and_ps(moved, _mm256_and_ps(_mm256_cmp_ps(sl2, zero, _CMP_GT_OQ), gain));
      l[i] = _mm256_blendv_ps(l[i], new_l, take);
      sumlx = _mm256_blendv_ps(sumlx, slx, take);
      suml2 = _mm256_blendv_ps(suml2, sl2, take);
      changed = _mm256_or_ps(changed, take);
    }
    if (_mm256_movemask_ps(_mm256_andnot_ps(grp.empty, changed)) == 0) break;
  }
  const __m256 scale = _mm256_and_ps(_mm256_cmp_ps(suml2, zero, _CMP_GT_OQ), _mm256_div_ps(sumlx, suml2));
  grp.store_scales(scale, scale_out);
  grp.store_codes(l, n, nmax, L);
}

void fit_iq4_x8(const float* x, float* scale_out) {
  constexpr int n = 32;
  const symmetric_groups grp(x, n);
  const __m256* xv = grp.x;
  const __m256* w = grp.w;
  const __m256 peak = grp.peak;
  const __m256 sign = _mm256_set1_ps(-0.0f), zero = _mm256_setzero_ps();
  alignas(32) float lo[8], hi[8];
  for (int k = 0; k < 8; ++k) {
    lo[k] = float(kvalues_iq4nl[k]);
    hi[k] = float(kvalues_iq4nl[k + 8]);
  }
  const __m256 level_lo = _mm256_load_ps(lo), level_hi = _mm256_load_ps(hi);
  // The level nearest to id * x as nearest_level (iq4.cpp) picks it: the index counts the doubled
  // midpoints at or below 2x.
  auto level = [&](__m256 v) {
    const __m256 v2 = _mm256_add_ps(v, v);
    __m256i idx = _mm256_setzero_si256();
    for (int k = 1; k < 16; ++k) {
      const __m256 at_or_above = _mm256_cmp_ps(v2, _mm256_set1_ps(float(kvalues_iq4nl[k - 1] + kvalues_iq4nl[k])), _CMP_GE_OQ);
      idx = _mm256_sub_epi32(idx, _mm256_castps_si256(at_or_above));
    }
    const __m256 upper = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));  // bit 3 of the index
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(level_lo, idx), _mm256_permutevar8x32_ps(level_hi, idx), upper);
  };
  auto fit = [&](__m256 id, __m256& sumqx, __m256& sumq2) {
    sumqx = zero;
    sumq2 = zero;
    for (int i = 0; i < n; ++i) {
      const __m256 q = level(_mm256_mul_ps(id, xv[i]));
      const __m256 wq = _mm256_mul_ps(w[i], q);
      sumqx = _mm256_add_ps(sumqx, _mm256_mul_ps(wq, xv[i]));
      sumq2 = _mm256_add_ps(sumq2, _mm256_mul_ps(wq, q));
    }
  };
  __m256 sumqx, sumq2;
  const __m256 first = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_xor_ps(peak, sign), _mm256_set1_ps(float(kvalues_iq4nl[0]))));
  fit(first, sumqx, sumq2);
  __m256 d = _mm256_and_ps(_mm256_cmp_ps(sumq2, zero, _CMP_GT_OQ), _mm256_div_ps(sumqx, sumq2));
  __m256 best = _mm256_mul_ps(d, sumqx);
  for (int t = -iq4_trials; t <= iq4_trials; ++t) {
    fit(_mm256_div_ps(_mm256_set1_ps(float(t + kvalues_iq4nl[0])), peak), sumqx, sumq2);
    const __m256 better = _mm256_and_ps(_mm256_cmp_ps(sumq2, zero, _CMP_GT_OQ),
                                        _mm256_cmp_ps(_mm256_mul_ps(sumqx, sumqx), _mm256_mul_ps(best, sumq2), _CMP_GT_OQ));
    d = _mm256_blendv_ps(d, _mm256_div_ps(sumqx, sumq2), better);
    best = _mm256_blendv_ps(best, _mm256_mul_ps(d, sumqx), better);
  }
  grp.store_scales(d, scale_out);
}

void fit_affine_x8(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* min_out, float* scale_out,
                   float rmin, float rdelta, int nstep, bool use_mad) {
  __m256 xv[qk_max_group]{}, wv[qk_max_group]{};  // (zeroed: GCC cannot see that n <= qk_max_group)
  load_groups(x, n, xv);
  load_groups(weights, n, wv);
  const __m256i vnmax = _mm256_set1_epi32(nmax);
  __m256 lo = xv[0], hi = xv[0];
  __m256 sum_w = wv[0];
  __m256 sum_x = _mm256_mul_ps(wv[0], xv[0]);
  for (int i = 1; i < n; ++i) {
    lo = _mm256_min_ps(xv[i], lo);  // std::min(lo, x): x only when x < lo
    hi = _mm256_max_ps(xv[i], hi);  // std::max(hi, x): x only when hi < x
    sum_w = _mm256_add_ps(sum_w, wv[i]);
    sum_x = _mm256_add_ps(sum_x, _mm256_mul_ps(wv[i], xv[i]));
  }
  lo = _mm256_blendv_ps(lo, _mm256_setzero_ps(), _mm256_cmp_ps(lo, _mm256_setzero_ps(), _CMP_GT_OQ));
  const __m256 flat = _mm256_cmp_ps(hi, lo, _CMP_EQ_OQ);

  __m256 iscale = _mm256_div_ps(_mm256_set1_ps(float(nmax)), _mm256_sub_ps(hi, lo));
  __m256 scale = _mm256_div_ps(_mm256_set1_ps(1.0f), iscale);
  __m256 best[qk_max_group], trial[qk_max_group];
  for (int i = 0; i < n; ++i) best[i] = affine_code(xv[i], iscale, lo, vnmax);
  __m256 best_error = affine_error(xv, wv, best, n, scale, lo, use_mad);
  for (int step = 0; nstep >= 1 && step <= nstep; ++step) {
    // The range from the offset found so far (the scalar search moves it with each better fit).
    iscale = _mm256_div_ps(_mm256_set1_ps(rmin + rdelta * float(step) + float(nmax)), _mm256_sub_ps(hi, lo));
    __m256 sum_l = _mm256_setzero_ps(), sum_l2 = _mm256_setzero_ps(), sum_xl = _mm256_setzero_ps();
    for (int i = 0; i < n; ++i) {
      trial[i] = affine_code(xv[i], iscale, lo, vnmax);
      const __m256 wl = _mm256_mul_ps(wv[i], trial[i]);
      sum_l = _mm256_add_ps(sum_l, wl);
      sum_l2 = _mm256_add_ps(sum_l2, _mm256_mul_ps(wl, trial[i]));
      sum_xl = _mm256_add_ps(sum_xl, _mm256_mul_ps(wl, xv[i]));
    }
    const __m256 det = _mm256_sub_ps(_mm256_mul_ps(sum_w, sum_l2), _mm256_mul_ps(sum_l, sum_l));
    const __m256 solvable = _mm256_cmp_ps(det, _mm256_setzero_ps(), _CMP_GT_OQ);
    if (_mm256_movemask_ps(solvable) == 0) continue;
    __m256 this_scale = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_w, sum_xl), _mm256_mul_ps(sum_x, sum_l)), det);
    __m256 this_min = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_l2, sum_x), _mm256_mul_ps(sum_l, sum_xl)), det);
    const __m256 clip = _mm256_cmp_ps(this_min, _mm256_setzero_ps(), _CMP_GT_OQ);
    this_min = _mm256_blendv_ps(this_min, _mm256_setzero_ps(), clip);
    this_scale = _mm256_blendv_ps(this_scale, _mm256_div_ps(sum_xl, sum_l2), clip);
    const __m256 err = affine_error(xv, wv, trial, n, this_scale, this_min, use_mad);
    const __m256 better = _mm256_andnot_ps(flat, _mm256_and_ps(solvable, _mm256_cmp_ps(err, best_error, _CMP_LT_OQ)));
    if (_mm256_movemask_ps(better) == 0) continue;
    for (int i = 0; i < n; ++i) best[i] = _mm256_blendv_ps(best[i], trial[i], better);
    best_error = _mm256_blendv_ps(best_error, err, better);
    scale = _mm256_blendv_ps(scale, this_scale, better);
    lo = _mm256_blendv_ps(lo, this_min, better);
  }
  // Flat groups (hi == lo): codes 0, scale 0, the minimum -lo of the first pass.
  alignas(32) float s[8], m[8], f[8];
  _mm256_store_ps(s, _mm256_blendv_ps(scale, _mm256_setzero_ps(), flat));
  _mm256_store_ps(m, _mm256_xor_ps(lo, _mm256_set1_ps(-0.0f)));  // -lo (of 0: -0, as the scalar)
  _mm256_store_ps(f, flat);
  for (int g = 0; g < 8; ++g) {
    scale_out[g] = s[g];
    min_out[g] = m[g];
  }
  for (int i = 0; i < n; ++i) {
    alignas(32) float l[8];
    _mm256_store_ps(l, best[i]);
    for (int g = 0; g < 8; ++g) L[g * n + i] = f[g] != 0.0f ? 0 : uint8_t(l[g]);
  }
}

}  // namespace glia::quant
