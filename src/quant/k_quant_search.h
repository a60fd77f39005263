// Scale searches of the k-quant and IQ4 reference quantizers (the algorithms of ggml's
// make_qx_quants, make_q3_quants, make_qkx2_quants and quantize_iq4_nl/xs, which llama-quantize
// runs when no importance matrix is given). Each fits one small group: it picks a scale (and a
// minimum) and the integer codes `L`. The *_groups forms run many groups, 8 at a time in the lanes
// of an AVX2 vector where the CPU has AVX2 (k_quant_search_avx2.cpp), with the same bits.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace glia::quant {

inline constexpr int qk_max_group = 32;  // largest group any search is run on (n <= this)

// Symmetric codes in [-nmax, nmax-1] stored as L + nmax, weighted by x^2: starts from the scale
// that maps the signed peak to -nmax, then tries 18 nearby inverse scales and keeps the one with
// the best weighted least-squares fit. Returns the scale (0 for an all-zero group).
float fit_symmetric_weighted(int n, int nmax, const float* x, int8_t* L);

// As above but refines codes one at a time (coordinate descent, up to 5 sweeps) instead of
// sweeping the scale; codes stored as L + nmax.
float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L);

// Affine codes in [0, nmax]: x ~ scale * L - min_out (min_out >= 0). Starts from the full range,
// then tries nstep+1 inverse scales (rmin + rdelta*i + nmax) / range, solving the weighted
// least-squares scale and offset for each code assignment; error is |diff| (use_mad) or diff^2.
float fit_affine(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* min_out,
                 float rmin, float rdelta, int nstep, bool use_mad);

// fit_affine for n_groups groups of n elements that lie one after another (group g: x + g*n,
// weights + g*n, codes at L + g*n, min_out[g], scale_out[g]): the same bits as one fit_affine call
// per group, 8 groups at a time in the lanes of a vector where the CPU has AVX2.
void fit_affine_groups(int n_groups, int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* min_out, float* scale_out, float rmin, float rdelta, int nstep, bool use_mad);

// fit_symmetric_weighted likewise for n_groups groups one after another (codes at L + g*n,
// scale_out[g]).
void fit_symmetric_weighted_groups(int n_groups, int n, int nmax, const float* x, int8_t* L, float* scale_out);
// And fit_symmetric_refined.
void fit_symmetric_refined_groups(int n_groups, int n, int nmax, const float* x, int8_t* L, float* scale_out);

// IQ4_NL's and IQ4_XS's scale search (iq4.cpp) for one group of 32: the group scale (0 for an
// all-zero group; the callers pick the codes for the final scale); and for n_groups groups of 32
// one after another. iq4_trials: the inverse scales tried each side of the first.
inline constexpr int iq4_trials = 7;
float fit_iq4_group(const float* x);
void fit_iq4_groups(int n_groups, const float* x, float* scale_out);

// How every *_groups form runs: eight(g) for groups g..g+7 while 8 remain, where the CPU has AVX2,
// then one(g) for each group left. Builds for other architectures leave the AVX2 searches out
// (CMakeLists.txt): there eight is never called.
template <class Eight, class One>
void by_groups_of_8(int n_groups, Eight eight, One one) {
  int g = 0;
#if defined(__x86_64__)
  if (has_avx2())
    for (; g + 8 <= n_groups; g += 8) eight(g);
#endif
  for (; g < n_groups; ++g) one(g);
}

// The vector searches themselves for 8 groups laid out as above (k_quant_search_avx2.cpp, built
// on x86-64 only): callable only where the CPU has AVX2.
void fit_symmetric_weighted_x8(int n, int nmax, const float* x, int8_t* L, float* scale_out);
void fit_symmetric_refined_x8(int n, int nmax, const float* x, int8_t* L, float* scale_out);
void fit_iq4_x8(const float* x, float* scale_out);
void fit_affine_x8(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* min_out, float* scale_out,
                   float rmin, float rdelta, int nstep, bool use_mad);

}  // namespace glia::quant
