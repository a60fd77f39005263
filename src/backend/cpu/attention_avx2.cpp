// AVX2 attend (cpu_kernels.h attend_job): per chunk of 64 slots, the K rows are converted to float
// and transposed ([dim][slot]) and the V rows converted, once for all query rows of the job (the
// heads of a GQA group times a tile of tokens). Scores come out of a register tile of 4 query rows x
// 16 slots (one multiply-add chain over the dimensions per score, so no horizontal reductions), the
// softmax weights use a vector exp, and the weighted V rows are summed by a tile of 2 query rows x
// 32 dimensions. Every score and every output lane is one chain in a fixed order that depends only
// on its own row, so results are batch invariant; they differ from the scalar twin only by float
// reassociation and the exp approximation (|error| <= 2 ulp).
#include "backend/cpu/simd_avx2.h"
// (simd_avx2.h first: it must not see anything compiled differently before it.)

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

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

// Elements [d0, d0 + 8) of row `slot` of a K or V buffer as floats (zero past n).
inline __m256 load8(const attend_job& j, const void* base, int64_t stride, int64_t slot, int d0, int n) {
  const int64_t off = slot * stride + d0;
  if (d0 + 8 <= n) {
    if (j.f16) return _mm256_cvtph_ps(load128(static_cast<const uint16_t*>(base) + off));
    return _mm256_loadu_ps(static_cast<const float*>(base) + off);
  }
  alignas(32) float tmp[8] = {};
  for (int d = 0; d < n - d0; ++d)
    tmp[d] = j.f16 ? half_to_float(static_cast<const uint16_t*>(base)[off + d]) : static_cast<const float*>(base)[off + d];
  return _mm256_load_ps(tmp);
}

// K rows of slots [s0, s0 + cnt) as kt[d][i] (pk rows of attend_chunk floats), zero past cnt / dk.
void load_k_transposed(const attend_job& j, int64_t s0, int cnt, size_t pk, float* kt) {
  constexpr size_t c = attend_chunk;
  for (int i0 = 0; i0 < int(c); i0 += 8) {
    for (size_t d0 = 0; d0 < pk; d0 += 8) {
      __m256i r[8];  // floats moved as 32-bit cells
      for (int i = 0; i < 8; ++i)
        r[i] = _mm256_castps_si256(i0 + i < cnt ? load8(j, j.k, j.k_stride, s0 + i0 + i, int(d0), j.dk) : _mm256_setzero_ps());
      transpose_8x8_i32(r);
      for (int d = 0; d < 8; ++d) _mm256_store_ps(kt + (d0 + size_t(d)) * c + size_t(i0), _mm256_castsi256_ps(r[d]));
    }
  }
}

// V rows of slots [s0, s0 + cnt) as vc[i][d] (rows of pv floats, zero past dv).
void load_v(const attend_job& j, int64_t s0, int cnt, size_t pv, float* vc) {
  for (int i = 0; i < cnt; ++i)
    for (size_t d0 = 0; d0 < pv; d0 += 8)
      _mm256_store_ps(vc + size_t(i) * pv + d0, load8(j, j.v, j.v_stride, s0 + i, int(d0), j.dv));
}

// s[r][i] = q[r] . k_i for R query rows and the slots of n16 16-slot groups: per score one
// multiply-add chain over d = 0..dk-1.
template <int R>
void tile_scores(const float* const q[R], const float* kt, int dk, int n16, float* const s[R]) {
  constexpr size_t c = attend_chunk;
  for (int g = 0; g < n16; ++g) {
    __m256 a[R][2];
    for (int r = 0; r < R; ++r) a[r][0] = a[r][1] = _mm256_setzero_ps();
    const float* kc = kt + 16 * g;
    for (int d = 0; d < dk; ++d) {
      const __m256 k0 = _mm256_load_ps(kc + size_t(d) * c), k1 = _mm256_load_ps(kc + size_t(d) * c + 8);
      for (int r = 0; r < R; ++r) {
        const __m256 qd = _mm256_broadcast_ss(q[r] + d);
        a[r][0] = _mm256_fmadd_ps(qd, k0, a[r][0]);
        a[r][1] = _mm256_fmadd_ps(qd, k1, a[r][1]);
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm256_store_ps(s[r] + 16 * g, a[r][0]);
      _mm256_store_ps(s[r] + 16 * g + 8, a[r][1]);
    }
  }
}

// acc[r] [pv] += sum_i e[r][i] * v_i over i < cnt for R query rows, 32 (then 8) dimensions at a time
// in registers: per output lane one multiply-add chain over the slots in order.
template <int R>
void tile_values(const float* const e[R], const float* vc, size_t pv, int cnt, float* const acc[R]) {
  size_t d = 0;
  for (; d + 32 <= pv; d += 32) {
    __m256 a[R][4];
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 4; ++k) a[r][k] = _mm256_load_ps(acc[r] + d + 8 * k);
    for (int i = 0; i < cnt; ++i) {
      const float* vr = vc + size_t(i) * pv + d;
      const __m256 v0 = _mm256_load_ps(vr), v1 = _mm256_load_ps(vr + 8), v2 = _mm256_load_ps(vr + 16),
                   v3 = _mm256_load_ps(vr + 24);
      for (int r = 0; r < R; ++r) {
        const __m256 w = _mm256_broadcast_ss(e[r] + i);
        a[r][0] = _mm256_fmadd_ps(w, v0, a[r][0]);
        a[r][1] = _mm256_fmadd_ps(w, v1, a[r][1]);
        a[r][2] = _mm256_fmadd_ps(w, v2, a[r][2]);
        a[r][3] = _mm256_fmadd_ps(w, v3, a[r][3]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 4; ++k) _mm256_store_ps(acc[r] + d + 8 * k, a[r][k]);
  }
  for (; d < pv; d += 8) {
    __m256 a[R];
    for (int r = 0; r < R; ++r) a[r] = _mm256_load_ps(acc[r] + d);
    for (int i = 0; i < cnt; ++i) {
      const __m256 v = _mm256_load_ps(vc + size_t(i) * pv + d);
      for (int r = 0; r < R; ++r) a[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(e[r] + i), v, a[r]);
    }
    for (int r = 0; r < R; ++r) _mm256_store_ps(acc[r] + d, a[r]);
  }
}

// Row groups of up to Rmax rows [0, n): f(integral_constant<R>, first row).
template <int Rmax, typename F>
void row_tiles(int n, F&& f) {
  int r = 0;
  for (; r + Rmax <= n; r += Rmax) f(std::integral_constant<int, Rmax>{}, r);
  if constexpr (Rmax > 1) {
    if (r < n) row_tiles<Rmax - 1>(n - r, [&](auto R, int r1) { f(R, r + r1); });
  }
}

// Softmax step of one row over one chunk: scores s [chunk] become the weights e^(s - m) of the
// visible slots (0 elsewhere); m, l and the row's accumulator are rescaled when the max grows.
void softmax_step(const attend_job& j, uint64_t bits, int cnt, float* s, float& m, float& l, float* acc, size_t pv) {
  const int cnt8 = (cnt + 7) / 8 * 8;
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for (int i = 0; i < cnt8; i += 8) {
    __m256 x = _mm256_mul_ps(_mm256_load_ps(s + i), _mm256_set1_ps(j.scale));
    if (j.softcap > 0.0f) {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, x);
      for (float& v : tmp) v = j.softcap * std::tanh(v / j.softcap);
      x = _mm256_load_ps(tmp);
    }
    const __m256i byte = _mm256_set1_epi32(int32_t((bits >> i) & 0xFF));
    const __m256 live = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(byte, lane_bit), lane_bit));
    x = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, live);
    _mm256_store_ps(s + i, x);
    vmax = _mm256_max_ps(vmax, x);
  }
  const float chunk_max = hmax_ps(vmax);
  if (chunk_max > m) {
    if (l > 0.0f) {
      const __m256 corr = exp_ps(_mm256_set1_ps(m - chunk_max));
      for (size_t d = 0; d < pv; d += 8) _mm256_store_ps(acc + d, _mm256_mul_ps(_mm256_load_ps(acc + d), corr));
      l *= _mm256_cvtss_f32(corr);
    }
    m = chunk_max;
  }
  __m256 lsum = _mm256_setzero_ps();
  const __m256 vm = _mm256_set1_ps(m);
  for (int i = 0; i < cnt8; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_load_ps(s + i), vm));
    _mm256_store_ps(s + i, e);
    lsum = _mm256_add_ps(lsum, e);
  }
  l += hsum_ps(lsum);
}

void attend_avx2(const attend_job& j, float* scratch) {
  constexpr size_t c = attend_chunk;
  const attend_parts sp = attend_begin(j, scratch);
  const size_t pk = sp.pk, pv = sp.pv;
  float* kt = sp.kt;
  float* vc = sp.vc;
  float* scores = sp.scores;
  float* acc = sp.acc;
  float* m = sp.m;
  float* l = sp.l;
  for (int64_t w = 0; w < j.vis_words; ++w) {
    uint64_t any = 0;
    for (int t = 0; t < j.n_tok; ++t) any |= j.vis[t * j.vis_words + w];
    if (!any) continue;
    const int64_t s0 = w * int64_t(c);
    // Slots past the last visible one are neither converted nor multiplied (a short context in a
    // long cache, the causal edge of a prefill tile): the chunk ends at the highest bit of the tile.
    const int cnt = visible_extent(any);
    load_k_transposed(j, s0, cnt, pk, kt);
    load_v(j, s0, cnt, pv, vc);
    const int n16 = (cnt + 15) / 16;
    for (int t = 0; t < j.n_tok; ++t) {
      const uint64_t bits = j.vis[t * j.vis_words + w];
      if (!bits) continue;
      // The softmax and the value sums stop at this token's own last visible slot, so a token's
      // chains do not depend on the other tokens of its tile (batch invariance).
      const int cnt_t = visible_extent(bits);
      const int r0 = t * j.n_q;
      row_tiles<4>(j.n_q, [&](auto R, int h0) {
        const float* q[R];
        float* s[R];
        for (int r = 0; r < R; ++r) {
          q[r] = j.q + t * j.q_stride + int64_t(h0 + r) * j.dk;
          s[r] = scores + size_t(r0 + h0 + r) * c;
        }
        tile_scores<R>(q, kt, j.dk, n16, s);
      });
      for (int h = 0; h < j.n_q; ++h) {
        const size_t r = size_t(r0 + h);
        softmax_step(j, bits, cnt_t, scores + r * c, m[r], l[r], acc + r * pv, pv);
      }
      row_tiles<2>(j.n_q, [&](auto R, int h0) {
        const float* e[R];
        float* a[R];
        for (int r = 0; r < R; ++r) {
          e[r] = scores + size_t(r0 + h0 + r) * c;
          a[r] = acc + size_t(r0 + h0 + r) * pv;
        }
        tile_values<R>(e, vc, pv, cnt_t, a);
      });
    }
  }
  attend_output(j, sp);
}

}  // namespace

attend_fn avx2_attend() { return attend_avx2; }

}  // namespace glia::cpu
