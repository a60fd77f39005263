// The float vectors the attend kernel (attention_kernels.h) is compiled for on x86: f32x8 (AVX2,
// attention_avx2.cpp) and, where the including file is built for AVX-512, f32x16
// (attention_avx512vnni.cpp). Internal linkage, as simd_avx2.h.
#pragma once

#include "backend/cpu/simd_avx2.h"
// (simd_avx2.h first: it must not see anything compiled differently before it.)

#include <algorithm>
#include <cmath>

namespace glia::cpu {
namespace {

struct f32x8 {
  using v = __m256;
  static constexpr int W = 8;
  static v zero() { return _mm256_setzero_ps(); }
  static v set1(float x) { return _mm256_set1_ps(x); }
  static v loadu(const float* p) { return _mm256_loadu_ps(p); }
  static v load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, v x) { _mm256_store_ps(p, x); }
  static v bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static v halves(const uint16_t* p) { return _mm256_cvtph_ps(load128(p)); }
  static v fmadd(v a, v b, v c) { return _mm256_fmadd_ps(a, b, c); }
  static v mul(v a, v b) { return _mm256_mul_ps(a, b); }
  static v sub(v a, v b) { return _mm256_sub_ps(a, b); }
  static v add(v a, v b) { return _mm256_add_ps(a, b); }
  static v max(v a, v b) { return _mm256_max_ps(a, b); }
  static v exp(v x) { return exp_ps(x); }
  static float first(v x) { return _mm256_cvtss_f32(x); }
  static float hmax(v x) { return hmax_ps(x); }
  static float hsum(v x) { return hsum_ps(x); }
  // x where bit k of `bits` is set, -inf elsewhere (lane k: bit k).
  static v keep_live(v x, uint64_t bits) {
    const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i byte = _mm256_set1_epi32(int32_t(bits & 0xFF));
    const __m256 live = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(byte, lane_bit), lane_bit));
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, live);
  }
  // Score tiles: up to 4 query rows x 3 vectors of slots, value tiles 4 rows x 3 vectors of
  // dimensions: 12 accumulators, 3 K or V vectors and a broadcast, all 16 registers (no spill in
  // the built loops). 12 multiply-add chains: 8 (4 x 2, before) leave part of two FMA pipes of
  // latency 4 idle; AttentionPrefillPerf AVX2 +11% (session 32). Tiles of fewer rows take up to 4
  // vectors. 2 x 4 took 8% longer than 4 x 2 on a Sapphire-Rapids-class core (AttentionPerf): each
  // K vector converted from fp16 serves fewer rows.
  static constexpr int score_rows = 4, score_accumulators = 12;
  static constexpr int value_rows = 4, value_vectors = 3;
  // r[i] lane k becomes r[k] lane i.
  static void transpose(v r[W]) {
    v t[W], s[W];
    for (int i = 0; i < W; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);  // per 128-bit lane: r_i[0] r_i+1[0] r_i[1] r_i+1[1]
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < W; g += 4) {  // s[g + e], lane half h: element 4h + e of rows g..g+3
      s[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
      s[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
      s[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
      s[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    for (int e = 0; e < 4; ++e) {
      r[e] = _mm256_permute2f128_ps(s[e], s[4 + e], 0x20);
      r[4 + e] = _mm256_permute2f128_ps(s[e], s[4 + e], 0x31);
    }
  }
};

#ifdef __AVX512F__
// e^x as exp_ps (simd_avx2.h) computes it, lane for lane, on 16 lanes.
inline __m512 exp512_ps(__m512 x) {
  const __m512 x0 = x;
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);  // also false for NaN
  const __mmask16 overflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.0f), _CMP_NLE_UQ);  // or NaN
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  const __m512i scale = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  const __m512 e = _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(scale));
  return _mm512_mask_blend_ps(overflow, e, _mm512_mul_ps(x0, _mm512_set1_ps(__builtin_inff())));
}

struct f32x16 {
  using v = __m512;
  static constexpr int W = 16;
  static v zero() { return _mm512_setzero_ps(); }
  static v set1(float x) { return _mm512_set1_ps(x); }
  static v loadu(const float* p) { return _mm512_loadu_ps(p); }
  static v load(const float* p) { return _mm512_loadu_ps(p); }  // scratch rows are 32-byte aligned
  static void store(float* p, v x) { _mm512_storeu_ps(p, x); }
  static v bcast(const float* p) { return _mm512_set1_ps(*p); }
  static v halves(const uint16_t* p) { return _mm512_cvtph_ps(load256(p)); }
  static v fmadd(v a, v b, v c) { return _mm512_fmadd_ps(a, b, c); }
  static v mul(v a, v b) { return _mm512_mul_ps(a, b); }
  static v sub(v a, v b) { return _mm512_sub_ps(a, b); }
  static v add(v a, v b) { return _mm512_add_ps(a, b); }
  static v max(v a, v b) { return _mm512_max_ps(a, b); }
  static v exp(v x) { return exp512_ps(x); }
  static float first(v x) { return _mm512_cvtss_f32(x); }
  static float hmax(v x) { return _mm512_reduce_max_ps(x); }
  static float hsum(v x) { return _mm512_reduce_add_ps(x); }
  static v keep_live(v x, uint64_t bits) { return _mm512_mask_blend_ps(__mmask16(bits & 0xFFFF), _mm512_set1_ps(-INFINITY), x); }
  // Score tiles: up to 8 query rows (a GQA group of 8 converts each K vector once) x 2 vectors of
  // slots, or 4 x 4; 16 accumulators (the broadcast is the multiply-add's memory operand).
  static constexpr int score_rows = 8, score_accumulators = 16;
  static constexpr int value_rows = 8, value_vectors = 2;  // value tiles: R x 2 accumulators
  // r[i] lane k becomes r[k] lane i.
  static void transpose(v r[W]) {
    v t[W];
    for (int i = 0; i < W; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);  // per quarter: r_i[0] r_i+1[0] r_i[1] r_i+1[1]
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < W; g += 4) {  // r[g + e], quarter q: element 4q + e of rows g..g+3
      const __m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 1]);
      const __m512d c = _mm512_castps_pd(t[g + 2]), d = _mm512_castps_pd(t[g + 3]);
      r[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
      r[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
      r[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
      r[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    v u[W];
    for (int e = 0; e < 4; ++e) {  // quarter q of rows 4g..4g+3 is element 4q + e: gather the quarters
      const v u0 = _mm512_shuffle_f32x4(r[e], r[4 + e], 0x88), u1 = _mm512_shuffle_f32x4(r[e], r[4 + e], 0xDD);
      const v u2 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0x88), u3 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0xDD);
      u[e] = _mm512_shuffle_f32x4(u0, u2, 0x88);
      u[8 + e] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
      u[4 + e] = _mm512_shuffle_f32x4(u1, u3, 0x88);
      u[12 + e] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
    }
    std::copy(u, u + W, r);
  }
};
#endif

}  // namespace
}  // namespace glia::cpu
