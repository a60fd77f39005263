// AVX2 attend (cpu_kernels.h attend_job): per chunk of visible slots, the K and V rows are
// converted to float once for all query heads of the group (a GQA group shares them), scores of 8
// slots come out of one reduction tree, softmax weights use a vector exp, and V rows are summed
// into per-head accumulators held in registers. Arithmetic per head depends only on that head's
// query and the slots, so results are batch invariant; they differ from the scalar twin only by
// float reassociation and the exp approximation (|error| <= 2 ulp).
#include "backend/cpu/simd_avx2.h"
// (simd_avx2.h first: it must not see anything compiled differently before it.)

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

constexpr size_t round8(size_t n) { return (n + 7) / 8 * 8; }

inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax_ps(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lane i = sum of the 8 lanes of v[i].
inline __m256 hsum_8x_ps(const __m256 v[8]) {
  const __m256 h01 = _mm256_hadd_ps(v[0], v[1]), h23 = _mm256_hadd_ps(v[2], v[3]);
  const __m256 h45 = _mm256_hadd_ps(v[4], v[5]), h67 = _mm256_hadd_ps(v[6], v[7]);
  const __m256 h0123 = _mm256_hadd_ps(h01, h23), h4567 = _mm256_hadd_ps(h45, h67);
  return _mm256_add_ps(_mm256_permute2f128_ps(h0123, h4567, 0x20), _mm256_permute2f128_ps(h0123, h4567, 0x31));
}

// e^x for x <= 0 (softmax arguments), 0 below -87 (where e^x is no longer a normal float; next to
// the chunk maximum's e^0 = 1 such weights vanish anyway). x = n ln2 + r with |r| <= ln2/2 (ln2 in
// two parts, so n ln2 is exact enough), e^r by its Taylor polynomial of degree 7 (truncation below
// 2.2e-8 relative), then 2^n through the exponent bits.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ);  // also false for NaN
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // ln2 high part: 8 bits, exact n * hi
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);      // ln2 - high part
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(scale)), underflow);
}

// Row `slot` of a K or V buffer as pd floats (the elements past n are zero).
inline void load_row(const attend_job& j, const void* base, int64_t stride, int32_t slot, int n, size_t pd, float* dst) {
  const int64_t off = int64_t(slot) * stride;
  int d = 0;
  if (j.f16) {
    const uint16_t* src = static_cast<const uint16_t*>(base) + off;
    for (; d + 8 <= n; d += 8) _mm256_store_ps(dst + d, _mm256_cvtph_ps(load128(src + d)));
    for (; d < n; ++d) dst[d] = half_to_float(src[d]);
  } else {
    const float* src = static_cast<const float*>(base) + off;
    for (; d + 8 <= n; d += 8) _mm256_store_ps(dst + d, _mm256_loadu_ps(src + d));
    for (; d < n; ++d) dst[d] = src[d];
  }
  for (; size_t(d) < pd; ++d) dst[d] = 0.0f;
}

// scores[i] = q . krow_i for i < cnt (cnt <= chunk), 8 slots per reduction tree.
void chunk_scores(const float* q, const float* kbuf, size_t pk, int cnt, float* scores) {
  for (int i0 = 0; i0 < cnt; i0 += 8) {
    __m256 part[8];
    for (int i = 0; i < 8; ++i) {
      // Slots past cnt read stale but finite rows of the buffer; their scores are dropped.
      const float* kr = kbuf + size_t(std::min(i0 + i, cnt - 1)) * pk;
      __m256 a0 = _mm256_mul_ps(_mm256_load_ps(q), _mm256_load_ps(kr));
      __m256 a1 = _mm256_setzero_ps();
      size_t d = 8;
      for (; d + 16 <= pk; d += 16) {
        a1 = _mm256_fmadd_ps(_mm256_load_ps(q + d), _mm256_load_ps(kr + d), a1);
        a0 = _mm256_fmadd_ps(_mm256_load_ps(q + d + 8), _mm256_load_ps(kr + d + 8), a0);
      }
      if (d < pk) a1 = _mm256_fmadd_ps(_mm256_load_ps(q + d), _mm256_load_ps(kr + d), a1);
      part[i] = _mm256_add_ps(a0, a1);
    }
    _mm256_store_ps(scores + i0, hsum_8x_ps(part));
  }
}

// acc [pv] += sum_i p[i] * vrow_i over i < cnt, 8 columns at a time in registers.
void chunk_values(const float* p, const float* vbuf, size_t pv, int cnt, float* acc) {
  size_t d = 0;
  for (; d + 32 <= pv; d += 32) {
    __m256 a0 = _mm256_load_ps(acc + d), a1 = _mm256_load_ps(acc + d + 8);
    __m256 a2 = _mm256_load_ps(acc + d + 16), a3 = _mm256_load_ps(acc + d + 24);
    for (int i = 0; i < cnt; ++i) {
      const __m256 w = _mm256_broadcast_ss(p + i);
      const float* vr = vbuf + size_t(i) * pv + d;
      a0 = _mm256_fmadd_ps(w, _mm256_load_ps(vr), a0);
      a1 = _mm256_fmadd_ps(w, _mm256_load_ps(vr + 8), a1);
      a2 = _mm256_fmadd_ps(w, _mm256_load_ps(vr + 16), a2);
      a3 = _mm256_fmadd_ps(w, _mm256_load_ps(vr + 24), a3);
    }
    _mm256_store_ps(acc + d, a0);
    _mm256_store_ps(acc + d + 8, a1);
    _mm256_store_ps(acc + d + 16, a2);
    _mm256_store_ps(acc + d + 24, a3);
  }
  for (; d < pv; d += 8) {
    __m256 a = _mm256_load_ps(acc + d);
    for (int i = 0; i < cnt; ++i) a = _mm256_fmadd_ps(_mm256_broadcast_ss(p + i), _mm256_load_ps(vbuf + size_t(i) * pv + d), a);
    _mm256_store_ps(acc + d, a);
  }
}

void attend_avx2(const attend_job& j, float* scratch) {
  const size_t pk = round8(size_t(j.dk)), pv = round8(size_t(j.dv)), c = attend_chunk;
  float* qbuf = scratch;                        // [n_q][pk]
  float* kbuf = qbuf + size_t(j.n_q) * pk;      // [chunk][pk]
  float* vbuf = kbuf + c * pk;                  // [chunk][pv]
  float* scores = vbuf + c * pv;                // [n_q][chunk]
  float* acc = scores + size_t(j.n_q) * c;      // [n_q][pv]
  float* m = acc + size_t(j.n_q) * pv;
  float* l = m + round8(size_t(j.n_q));
  for (int h = 0; h < j.n_q; ++h) {
    float* qh = qbuf + size_t(h) * pk;
    std::copy(j.q + size_t(h) * size_t(j.dk), j.q + size_t(h + 1) * size_t(j.dk), qh);
    std::fill(qh + j.dk, qh + pk, 0.0f);
    std::fill(acc + size_t(h) * pv, acc + size_t(h + 1) * pv, 0.0f);
    m[h] = -INFINITY;
    l[h] = 0.0f;
  }
  for (int64_t c0 = 0; c0 < j.n_slots; c0 += attend_chunk) {
    const int cnt = int(std::min<int64_t>(attend_chunk, j.n_slots - c0));
    for (int i = 0; i < cnt; ++i) load_row(j, j.k, j.k_stride, j.slots[c0 + i], j.dk, pk, kbuf + size_t(i) * pk);
    for (int i = 0; i < cnt; ++i) load_row(j, j.v, j.v_stride, j.slots[c0 + i], j.dv, pv, vbuf + size_t(i) * pv);
    const int cnt8 = (cnt + 7) / 8 * 8;
    for (int h = 0; h < j.n_q; ++h) {
      float* sh = scores + size_t(h) * c;
      chunk_scores(qbuf + size_t(h) * pk, kbuf, pk, cnt, sh);
      __m256 vmax = _mm256_set1_ps(-INFINITY);
      for (int i = 0; i < cnt8; i += 8) {
        __m256 s = _mm256_mul_ps(_mm256_load_ps(sh + i), _mm256_set1_ps(j.scale));
        if (j.softcap > 0.0f) {
          alignas(32) float tmp[8];
          _mm256_store_ps(tmp, s);
          for (float& x : tmp) x = j.softcap * std::tanh(x / j.softcap);
          s = _mm256_load_ps(tmp);
        }
        // Lanes past cnt never count: -inf scores give zero weight.
        const __m256 live = _mm256_cmp_ps(_mm256_add_ps(_mm256_set1_ps(float(i)), _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7)),
                                          _mm256_set1_ps(float(cnt)), _CMP_LT_OQ);
        s = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), s, live);
        _mm256_store_ps(sh + i, s);
        vmax = _mm256_max_ps(vmax, s);
      }
      const float chunk_max = hmax_ps(vmax);
      float* ah = acc + size_t(h) * pv;
      if (chunk_max > m[h]) {
        if (l[h] > 0.0f) {
          const __m256 corr = exp_nonpositive(_mm256_set1_ps(m[h] - chunk_max));
          for (size_t d = 0; d < pv; d += 8) _mm256_store_ps(ah + d, _mm256_mul_ps(_mm256_load_ps(ah + d), corr));
          l[h] *= _mm256_cvtss_f32(corr);
        }
        m[h] = chunk_max;
      }
      __m256 lsum = _mm256_setzero_ps();
      const __m256 vm = _mm256_set1_ps(m[h]);
      for (int i = 0; i < cnt8; i += 8) {
        const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_load_ps(sh + i), vm));
        _mm256_store_ps(sh + i, e);
        lsum = _mm256_add_ps(lsum, e);
      }
      l[h] += hsum_ps(lsum);
      chunk_values(sh, vbuf, pv, cnt, ah);
    }
  }
  for (int h = 0; h < j.n_q; ++h) {
    float* oh = j.out + size_t(h) * size_t(j.dv);
    if (l[h] > 0.0f) {
      const float inv = 1.0f / l[h];
      for (int d = 0; d < j.dv; ++d) oh[d] = acc[size_t(h) * pv + size_t(d)] * inv;
    } else {
      std::fill(oh, oh + j.dv, 0.0f);  // no visible key (cannot happen once the token itself is stored)
    }
  }
}

}  // namespace

attend_fn avx2_attend() { return attend_avx2; }

}  // namespace glia::cpu
