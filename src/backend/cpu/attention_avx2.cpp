// AVX2 attend (cpu_kernels.h attend_job). Per chunk of 64 slots: scores from register tiles of
// R query rows x 8/R slots (R = 4, 2 or 1; dimensions in the lanes, one multiply-add chain per
// lane and a fixed reduction tree over the lanes, so a score's bits do not depend on the tile), the
// softmax weights with a vector exp, and the weighted V rows summed by tiles of R query rows x 16
// dimensions (per output lane one multiply-add chain over the slots in order). K and V are read
// where they lie in the cache, fp16 converted in the tiles (measured faster than converting each
// chunk once into scratch, for decode and prefill alike); only heads whose length is not a multiple
// of 8 are converted per chunk, zero-padded. Every row's result is independent of the other rows of
// its job (batch invariance). Results differ from the scalar twin only by float reassociation and
// the exp approximation (|error| <= 2 ulp).
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

// The K or V rows of one KV head as the tiles read them: 8 elements of row i from dimension d as
// floats. Rows are either the cache's own (fp16 or f32, `stride` elements apart) or a chunk
// converted into scratch (f32, stride pk).
struct f16_rows {
  const uint16_t* base;
  int64_t stride;
  __m256 load(int64_t i, size_t d) const { return _mm256_cvtph_ps(load128(base + i * stride + int64_t(d))); }
};
struct f32_rows {
  const float* base;
  int64_t stride;
  __m256 load(int64_t i, size_t d) const { return _mm256_loadu_ps(base + i * stride + int64_t(d)); }
};

// Rows of slots [s0, s0 + cnt) of a K or V buffer as out[i][p] floats (rows of p floats, zero past n).
void load_rows(const attend_job& j, const void* base, int64_t stride, int n, int64_t s0, int cnt, size_t p, float* out) {
  for (int i = 0; i < cnt; ++i)
    for (size_t d0 = 0; d0 < p; d0 += 8) _mm256_store_ps(out + size_t(i) * p + d0, load8(j, base, stride, s0 + i, int(d0), n));
}

// Sums of the lanes of a[0..7] as one vector: lane k holds a[k]'s sum, added as
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) whichever tile the accumulators came from.
inline __m256 reduce_8x8(const __m256 a[8]) {
  auto pairs = [](__m256 x, __m256 y) {  // hadd: [x0+x1, x2+x3, y0+y1, y2+y3 | the same above]
    return _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x88), _mm256_shuffle_ps(x, y, 0xDD));
  };
  const __m256 u0 = pairs(pairs(a[0], a[1]), pairs(a[2], a[3]));
  const __m256 u1 = pairs(pairs(a[4], a[5]), pairs(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// Scores of R query rows (R = 4, 2 or 1) against slots [0, n8 * 8) of a chunk: s[r][i] = q[r] . k_i,
// S = 8 / R slots of each row at a time (lane r * S + i of the reduction). Slots from `last` on
// read row `last` (they are masked by the softmax; the cache may end before the group does).
template <int R, class Rows>
void tile_scores(const float* const q[R], const Rows& k, size_t pk, int n8, int last, float* const s[R]) {
  constexpr int S = 8 / R;
  for (int i0 = 0; i0 < 8 * n8; i0 += S) {
    int64_t row[S];
    for (int i = 0; i < S; ++i) row[i] = std::min(i0 + i, last);
    __m256 a[8];
    for (auto& x : a) x = _mm256_setzero_ps();
    for (size_t d = 0; d < pk; d += 8) {
      __m256 qd[R];
      for (int r = 0; r < R; ++r) qd[r] = _mm256_loadu_ps(q[r] + d);
      for (int i = 0; i < S; ++i) {
        const __m256 kv = k.load(row[i], d);
        for (int r = 0; r < R; ++r) a[r * S + i] = _mm256_fmadd_ps(qd[r], kv, a[r * S + i]);
      }
    }
    const __m256 sum = reduce_8x8(a);
    if constexpr (R == 1) {
      _mm256_storeu_ps(s[0] + i0, sum);
    } else if constexpr (R == 2) {
      _mm_storeu_ps(s[0] + i0, _mm256_castps256_ps128(sum));
      _mm_storeu_ps(s[1] + i0, _mm256_extractf128_ps(sum, 1));
    } else {
      const __m128 lo = _mm256_castps256_ps128(sum), hi = _mm256_extractf128_ps(sum, 1);
      _mm_storel_pi(reinterpret_cast<__m64*>(s[0] + i0), lo);
      _mm_storeh_pi(reinterpret_cast<__m64*>(s[1] + i0), lo);
      _mm_storel_pi(reinterpret_cast<__m64*>(s[2] + i0), hi);
      _mm_storeh_pi(reinterpret_cast<__m64*>(s[3] + i0), hi);
    }
  }
}

// acc[r][d] += sum_i e[r][i] * v_i[d] over slots i < cnt for R query rows, 16 (then 8) dimensions
// at a time in registers: per output lane one multiply-add chain over the slots in order.
template <int R, class Rows>
void tile_values(const float* const e[R], const Rows& v, size_t pv, int cnt, float* const acc[R]) {
  size_t d = 0;
  for (; d + 16 <= pv; d += 16) {
    __m256 a[R][2];
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 2; ++k) a[r][k] = _mm256_load_ps(acc[r] + d + 8 * k);
    for (int i = 0; i < cnt; ++i) {
      const __m256 v0 = v.load(i, d), v1 = v.load(i, d + 8);
      for (int r = 0; r < R; ++r) {
        const __m256 w = _mm256_broadcast_ss(e[r] + i);
        a[r][0] = _mm256_fmadd_ps(w, v0, a[r][0]);
        a[r][1] = _mm256_fmadd_ps(w, v1, a[r][1]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 2; ++k) _mm256_store_ps(acc[r] + d + 8 * k, a[r][k]);
  }
  for (; d < pv; d += 8) {
    __m256 a[R];
    for (int r = 0; r < R; ++r) a[r] = _mm256_load_ps(acc[r] + d);
    for (int i = 0; i < cnt; ++i) {
      const __m256 x = v.load(i, d);
      for (int r = 0; r < R; ++r) a[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(e[r] + i), x, a[r]);
    }
    for (int r = 0; r < R; ++r) _mm256_store_ps(acc[r] + d, a[r]);
  }
}

// Row groups of [0, n) of 4, then 2, then 1 rows: f(integral_constant<R>, first row).
template <typename F>
void row_tiles(int n, F&& f) {
  int r = 0;
  for (; r + 4 <= n; r += 4) f(std::integral_constant<int, 4>{}, r);
  if (r + 2 <= n) {
    f(std::integral_constant<int, 2>{}, r);
    r += 2;
  }
  if (r < n) f(std::integral_constant<int, 1>{}, r);
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

// One chunk of a job: scores, softmax step and value sums for every token that sees a slot of it,
// K and V read through `k` and `v` (row i: slot s0 + i).
template <class Rows>
void attend_chunk_rows(const attend_job& j, const attend_parts& sp, int64_t w, const Rows& k, const Rows& v, bool padded_q) {
  constexpr size_t c = attend_chunk;
  for (int t = 0; t < j.n_tok; ++t) {
    const uint64_t bits = j.vis[t * j.vis_words + w];
    if (!bits) continue;
    // The softmax and the value sums stop at this token's own last visible slot, so a token's
    // chains do not depend on the other tokens of its tile (batch invariance).
    const int cnt_t = visible_extent(bits);
    const int r0 = t * j.n_q;
    row_tiles(j.n_q, [&](auto R, int h0) {
      const float* q[R];
      float* s[R];
      for (int r = 0; r < R; ++r) {
        q[r] = padded_q ? sp.qp + size_t(r0 + h0 + r) * sp.pk : j.q + t * j.q_stride + int64_t(h0 + r) * j.dk;
        s[r] = sp.scores + size_t(r0 + h0 + r) * c;
      }
      tile_scores<R>(q, k, sp.pk, (cnt_t + 7) / 8, cnt_t - 1, s);
    });
    for (int h = 0; h < j.n_q; ++h) {
      const size_t r = size_t(r0 + h);
      softmax_step(j, bits, cnt_t, sp.scores + r * c, sp.m[r], sp.l[r], sp.acc + r * sp.pv, sp.pv);
    }
    row_tiles(j.n_q, [&](auto R, int h0) {
      const float* e[R];
      float* a[R];
      for (int r = 0; r < R; ++r) {
        e[r] = sp.scores + size_t(r0 + h0 + r) * c;
        a[r] = sp.acc + size_t(r0 + h0 + r) * sp.pv;
      }
      tile_values<R>(e, v, sp.pv, cnt_t, a);
    });
  }
}

void attend_avx2(const attend_job& j, float* scratch) {
  constexpr size_t c = attend_chunk;
  const attend_parts sp = attend_begin(j, scratch);
  const size_t pk = sp.pk, pv = sp.pv;
  // The tiles read 8 dimensions at a time: query rows whose length is not a multiple of 8 are
  // copied, zero-padded, once per job (and K and V converted per chunk, below).
  const bool tails = size_t(j.dk) != pk || size_t(j.dv) != pv;
  if (tails) {
    for (int t = 0; t < j.n_tok; ++t)
      for (int h = 0; h < j.n_q; ++h) {
        const float* src = j.q + t * j.q_stride + int64_t(h) * j.dk;
        float* padded = sp.qp + size_t(t * j.n_q + h) * pk;
        std::copy(src, src + j.dk, padded);
        std::fill(padded + j.dk, padded + pk, 0.0f);
      }
  }

  for (int64_t w = 0; w < j.vis_words; ++w) {
    uint64_t any = 0;
    for (int t = 0; t < j.n_tok; ++t) any |= j.vis[t * j.vis_words + w];
    if (!any) continue;
    const int64_t s0 = w * int64_t(c);
    if (tails) {
      // Slots past the last visible one are not converted (a short context in a long cache, the
      // causal edge of a prefill tile): the chunk ends at the highest bit of the tile.
      const int cnt = visible_extent(any);
      load_rows(j, j.k, j.k_stride, j.dk, s0, cnt, pk, sp.kc);
      load_rows(j, j.v, j.v_stride, j.dv, s0, cnt, pv, sp.vc);
      attend_chunk_rows(j, sp, w, f32_rows{sp.kc, int64_t(pk)}, f32_rows{sp.vc, int64_t(pv)}, tails);
    } else if (j.f16) {
      const auto* k = static_cast<const uint16_t*>(j.k) + s0 * j.k_stride;
      const auto* v = static_cast<const uint16_t*>(j.v) + s0 * j.v_stride;
      attend_chunk_rows(j, sp, w, f16_rows{k, j.k_stride}, f16_rows{v, j.v_stride}, tails);
    } else {
      const auto* k = static_cast<const float*>(j.k) + s0 * j.k_stride;
      const auto* v = static_cast<const float*>(j.v) + s0 * j.v_stride;
      attend_chunk_rows(j, sp, w, f32_rows{k, j.k_stride}, f32_rows{v, j.v_stride}, tails);
    }
  }
  attend_output(j, sp);
}

}  // namespace

attend_fn avx2_attend() { return attend_avx2; }

}  // namespace glia::cpu
