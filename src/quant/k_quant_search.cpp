// The float expressions below keep ggml's evaluation order on purpose: llama-quantize ran these
// searches to produce the model files, and keeping the order lets re-quantization reproduce them.
#include "quant/k_quant_search.h"

#include <algorithm>
#include <cmath>

#include "quant/ref_kernels.h"

namespace glia::quant {
namespace {

// The signed element of largest magnitude (first on ties) and that magnitude.
float signed_peak(int n, const float* x, float* amax_out) {
  float amax = 0, peak = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      peak = x[i];
    }
  }
  *amax_out = amax;
  return peak;
}

int symmetric_code(float v, int nmax) { return std::clamp(nearest_int(v), -nmax, nmax - 1); }

}  // namespace

float fit_symmetric_weighted(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float peak = signed_peak(n, x, &amax);
  if (amax < group_max_eps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  // Weighted sums of the fit x ~ scale * l with weights x^2 (large values matter most).
  auto weighted_sums = [&](float iscale, float* sumlx, float* suml2) {
    *sumlx = 0;
    *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = float(symmetric_code(iscale * x[i], nmax));
      const float w = x[i] * x[i];
      *sumlx += w * x[i] * l;
      *suml2 += w * l * l;
    }
  };
  auto assign = [&](float iscale) {
    for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + symmetric_code(iscale * x[i], nmax));
  };

  float iscale = float(-nmax) / peak;
  float sumlx, suml2;
  weighted_sums(iscale, &sumlx, &suml2);
  assign(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  // sumlx^2 / suml2 is the reduction of squared error a fit achieves; keep the largest.
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(step)) / peak;
    weighted_sums(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      assign(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float peak = signed_peak(n, x, &amax);
  if (amax < group_max_eps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  const float iscale = float(-nmax) / peak;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = symmetric_code(iscale * x[i], nmax);
    L[i] = int8_t(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  // Coordinate descent: move one code to its best value given all others, keep the move when
  // it raises sumlx^2 / suml2 (the fitted scale is sumlx / suml2).
  for (int sweep = 0; sweep < 5; ++sweep) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * float(L[i]) * float(L[i]);
      const int new_l = symmetric_code(x[i] * sl2 / slx, nmax);
      if (new_l == L[i]) continue;
      slx += w * x[i] * float(new_l);
      sl2 += w * float(new_l) * float(new_l);
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = int8_t(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++n_changed;
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0 ? sumlx / suml2 : 0.0f;
}

float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* min_out,
                 float rmin, float rdelta, int nstep, bool use_mad) {
  float lo = x[0], hi = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  // The offset only ever subtracts (x ~ scale*L + lo with lo <= 0), as stored mins are unsigned.
  if (lo > 0) lo = 0;
  if (hi == lo) {
    std::fill(L, L + n, uint8_t(0));
    *min_out = -lo;
    return 0.0f;
  }
  auto code = [&](float iscale, float offset, int i) {
    return uint8_t(std::clamp(nearest_int(iscale * (x[i] - offset)), 0, nmax));
  };
  auto error_of = [&](float scale, float offset, const uint8_t* codes) {
    float err = 0;
    for (int i = 0; i < n; ++i) {
      float diff = scale * float(codes[i]) + offset - x[i];
      diff = use_mad ? std::fabs(diff) : diff * diff;
      err += weights[i] * diff;
    }
    return err;
  };

  float iscale = float(nmax) / (hi - lo);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i) L[i] = code(iscale, lo, i);
  float best_error = error_of(scale, lo, L);
  if (nstep < 1) {
    *min_out = -lo;
    return scale;
  }
  uint8_t trial[qk_max_group];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * float(step) + float(nmax)) / (hi - lo);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      trial[i] = code(iscale, lo, i);
      const float l = float(trial[i]);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    // Weighted least squares for x ~ scale * l + offset with these codes.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float err = error_of(this_scale, this_min, trial);
    if (err < best_error) {
      std::copy(trial, trial + n, L);
      best_error = err;
      scale = this_scale;
      lo = this_min;
    }
  }
  *min_out = -lo;
  return scale;
}

void fit_symmetric_weighted_groups(int n_groups, int n, int nmax, const float* x, int8_t* L, float* scale_out) {
  by_groups_of_8(
      n_groups, [&](int g) { fit_symmetric_weighted_x8(n, nmax, x + g * n, L + g * n, scale_out + g); },
      [&](int g) { scale_out[g] = fit_symmetric_weighted(n, nmax, x + g * n, L + g * n); });
}

void fit_symmetric_refined_groups(int n_groups, int n, int nmax, const float* x, int8_t* L, float* scale_out) {
  by_groups_of_8(
      n_groups, [&](int g) { fit_symmetric_refined_x8(n, nmax, x + g * n, L + g * n, scale_out + g); },
      [&](int g) { scale_out[g] = fit_symmetric_refined(n, nmax, x + g * n, L + g * n); });
}

void fit_affine_groups(int n_groups, int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* min_out, float* scale_out, float rmin, float rdelta, int nstep, bool use_mad) {
  by_groups_of_8(
      n_groups,
      [&](int g) {
        fit_affine_x8(n, nmax, x + g * n, weights + g * n, L + g * n, min_out + g, scale_out + g, rmin, rdelta, nstep,
                      use_mad);
      },
      [&](int g) {
        scale_out[g] = fit_affine(n, nmax, x + g * n, weights + g * n, L + g * n, &min_out[g], rmin, rdelta, nstep, use_mad);
      });
}

}  // namespace glia::quant
