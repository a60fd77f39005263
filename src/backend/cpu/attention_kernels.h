// The attend kernel (cpu_kernels.h attend_job), written once against a float vector of W lanes:
// f32x8 (AVX2) and f32x16 (AVX-512 builds). Per chunk of 64 slots: scores from register tiles of
// R query rows x W/R slots (R = 4, 2 or 1; dimensions in the lanes, one multiply-add chain per
// lane and a fixed reduction tree over the lanes, so a score's bits do not depend on the tile), the
// softmax weights with a vector exp, and the weighted V rows summed by tiles of R query rows x 2W
// dimensions (per output lane one multiply-add chain over the slots in order). K and V are read
// where they lie in the cache, fp16 converted in the tiles (measured faster than converting each
// chunk once into scratch, for decode and prefill alike); only heads whose length is not a multiple
// of W are converted per chunk, zero-padded. Every row's result is independent of the other rows
// of its job (batch invariance); the two widths sum in different orders, so they agree with each
// other and with the scalar twin only up to float reassociation and the exp approximation.
// Included by one .cpp per instruction set: everything has internal linkage (see simd_avx2.h).
#pragma once

#include "backend/cpu/simd_avx2.h"
// (simd_avx2.h first: it must not see anything compiled differently before it.)

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "backend/cpu/cpu_kernels.h"

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
  // Lane k: the sum of a[k]'s lanes, added as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
  static v reduce(const v a[W]) {
    const v u0 = pairs(pairs(a[0], a[1]), pairs(a[2], a[3]));
    const v u1 = pairs(pairs(a[4], a[5]), pairs(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
  }
  // hadd within each 128-bit lane: [x0+x1, x2+x3, y0+y1, y2+y3], and so on above.
  static v pairs(v x, v y) { return _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x88), _mm256_shuffle_ps(x, y, 0xDD)); }
};

#ifdef __AVX512F__
// e^x as exp_ps (simd_avx2.h) computes it, lane for lane, on 16 lanes.
inline __m512 exp512_ps(__m512 x) {
  const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);  // also false for NaN
  const __mmask16 overflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.0f), _CMP_GT_OQ);
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
  return _mm512_mask_blend_ps(overflow, e, _mm512_set1_ps(__builtin_inff()));
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
  // Lane k: the sum of a[k]'s lanes: within each 128-bit quarter as f32x8 does, then the quarters
  // as (q0 + q2) + (q1 + q3).
  static v reduce(const v a[W]) {
    v u[4];
    for (int g = 0; g < 4; ++g) u[g] = pairs(pairs(a[4 * g], a[4 * g + 1]), pairs(a[4 * g + 2], a[4 * g + 3]));
    // u[g] quarter j: the partial sums over lanes 4j..4j+3 of a[4g..4g+3].
    const v y0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x44), _mm512_shuffle_f32x4(u[0], u[1], 0xEE));
    const v y1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x44), _mm512_shuffle_f32x4(u[2], u[3], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_f32x4(y0, y1, 0x88), _mm512_shuffle_f32x4(y0, y1, 0xDD));
  }
  static v pairs(v x, v y) { return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88), _mm512_shuffle_ps(x, y, 0xDD)); }
};
#endif

// Elements [d0, d0 + W) of row `slot` of a K or V buffer as floats at out, zero past n (the
// conversion of heads whose length is not a multiple of W).
template <class F>
void load_padded(const attend_job& j, const void* base, int64_t stride, int64_t slot, int d0, int n, float* out) {
  const int64_t off = slot * stride + d0;
  if (d0 + F::W <= n) {
    F::store(out, j.f16 ? F::halves(static_cast<const uint16_t*>(base) + off) : F::loadu(static_cast<const float*>(base) + off));
    return;
  }
  for (int d = 0; d < F::W; ++d) out[d] = d0 + d < n ? kv_element(j, base, off + d) : 0.0f;
}

// A cache row `attend_prefetch_slots` slots past row i is asked for while row i is read: a decode step
// meets its layer's K and V in memory (the step's weights have streamed through the caches since),
// and the hardware prefetchers alone read them at 7-11 GB/s. `AttentionPerf` "from memory" (2048
// slots, 2 threads, AVX-512, session 25): slot-major rows 0.23 -> 0.19 ms with the prefetch;
// head-major rows (the CPU's kv_layout) 0.20-0.23 -> 0.16. 16 slots: 2 KiB of a 64-dim fp16 head
// ahead of the reads; 8 and 32 measured the same.
inline constexpr int attend_prefetch_slots = 16;
// Rows `stride` bytes apart: the `bytes` of row i + attend_prefetch_slots.
inline void prefetch_row(const void* base, int64_t stride, int64_t i, size_t bytes) {
  // In integers: the row past the cache's end is never read, and a prefetch does not fault.
  const uintptr_t first = reinterpret_cast<uintptr_t>(base) + uintptr_t((i + attend_prefetch_slots) * stride);
  for (uintptr_t line = first & ~uintptr_t(63); line < first + bytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
}

// The K or V rows of one KV head as the tiles read them: W elements of row i from dimension d as
// floats, and prefetch(i, n) asks for the n elements of the row attend_prefetch_slots further on.
// Rows are either the cache's own (fp16 or f32, `stride` elements apart) or a chunk converted into
// scratch (f32, stride pk; the conversion prefetches the cache rows instead).
template <class F>
struct f16_rows {
  const uint16_t* base;
  int64_t stride;
  typename F::v load(int64_t i, size_t d) const { return F::halves(base + i * stride + int64_t(d)); }
  void prefetch(int64_t i, size_t n) const { prefetch_row(base, stride * 2, i, n * 2); }
};
template <class F>
struct f32_rows {
  const float* base;
  int64_t stride;
  typename F::v load(int64_t i, size_t d) const { return F::loadu(base + i * stride + int64_t(d)); }
  void prefetch(int64_t i, size_t n) const { prefetch_row(base, stride * 4, i, n * 4); }
};
template <class F>
struct converted_rows : f32_rows<F> {
  void prefetch(int64_t, size_t) const {}
};

// Scores of R query rows (R = 4, 2 or 1) against slots [0, n) of a chunk (n a multiple of W):
// s[r][i] = q[r] . k_i, S = W / R slots of each row at a time (lane r * S + i of the reduction).
// Slots from `last` on read row `last` (they are masked by the softmax; the cache may end before
// the group does). `ahead`: prefetch the rows to come (one tile of each chunk does).
template <class F, int R, class Rows>
void tile_scores(const float* const q[R], const Rows& k, size_t pk, int n, int last, float* const s[R], bool ahead) {
  using V = typename F::v;
  constexpr int S = F::W / R;
  for (int i0 = 0; i0 < n; i0 += S) {
    if (ahead)
      for (int i = 0; i < S; ++i) k.prefetch(i0 + i, pk);
    int64_t row[S];
    for (int i = 0; i < S; ++i) row[i] = std::min(i0 + i, last);
    V a[F::W];
    for (auto& x : a) x = F::zero();
    for (size_t d = 0; d < pk; d += F::W) {
      V qd[R];
      for (int r = 0; r < R; ++r) qd[r] = F::loadu(q[r] + d);
      for (int i = 0; i < S; ++i) {
        const V kv = k.load(row[i], d);
        for (int r = 0; r < R; ++r) a[r * S + i] = F::fmadd(qd[r], kv, a[r * S + i]);
      }
    }
    alignas(64) float sum[F::W];
    F::store(sum, F::reduce(a));
    for (int r = 0; r < R; ++r) std::copy(sum + r * S, sum + (r + 1) * S, s[r] + i0);
  }
}

// acc[r][d] += sum_i e[r][i] * v_i[d] over slots i < cnt for R query rows, 2W (then W) dimensions
// at a time in registers: per output lane one multiply-add chain over the slots in order.
// `ahead`: prefetch the rows to come while the first dimensions are read.
template <class F, int R, class Rows>
void tile_values(const float* const e[R], const Rows& v, size_t pv, int cnt, float* const acc[R], bool ahead) {
  using V = typename F::v;
  constexpr size_t W = F::W;
  size_t d = 0;
  for (; d + 2 * W <= pv; d += 2 * W) {
    V a[R][2];
    for (int r = 0; r < R; ++r)
      for (size_t k = 0; k < 2; ++k) a[r][k] = F::load(acc[r] + d + W * k);
    for (int i = 0; i < cnt; ++i) {
      if (ahead && d == 0) v.prefetch(i, pv);
      const V v0 = v.load(i, d), v1 = v.load(i, d + W);
      for (int r = 0; r < R; ++r) {
        const V w = F::bcast(e[r] + i);
        a[r][0] = F::fmadd(w, v0, a[r][0]);
        a[r][1] = F::fmadd(w, v1, a[r][1]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (size_t k = 0; k < 2; ++k) F::store(acc[r] + d + W * k, a[r][k]);
  }
  for (; d < pv; d += W) {
    V a[R];
    for (int r = 0; r < R; ++r) a[r] = F::load(acc[r] + d);
    for (int i = 0; i < cnt; ++i) {
      if (ahead && d == 0) v.prefetch(i, pv);
      const V x = v.load(i, d);
      for (int r = 0; r < R; ++r) a[r] = F::fmadd(F::bcast(e[r] + i), x, a[r]);
    }
    for (int r = 0; r < R; ++r) F::store(acc[r] + d, a[r]);
  }
}

// Row groups of [0, n) of 4, then 2, then 1 rows: f(integral_constant<R>, first row).
template <typename Fn>
void row_tiles(int n, Fn&& f) {
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
template <class F>
void softmax_step(const attend_job& j, uint64_t bits, int cnt, float* s, float& m, float& l, float* acc, size_t pv) {
  using V = typename F::v;
  constexpr int W = F::W;
  const int cntw = (cnt + W - 1) / W * W;
  V vmax = F::set1(-INFINITY);
  for (int i = 0; i < cntw; i += W) {
    V x = F::mul(F::load(s + i), F::set1(j.scale));
    if (j.softcap > 0.0f) {
      alignas(64) float tmp[W];
      F::store(tmp, x);
      for (float& v : tmp) v = j.softcap * std::tanh(v / j.softcap);
      x = F::load(tmp);
    }
    x = F::keep_live(x, bits >> i);
    F::store(s + i, x);
    vmax = F::max(vmax, x);
  }
  const float chunk_max = F::hmax(vmax);
  if (chunk_max > m) {
    if (l > 0.0f) {
      const V corr = F::exp(F::set1(m - chunk_max));
      for (size_t d = 0; d < pv; d += W) F::store(acc + d, F::mul(F::load(acc + d), corr));
      l *= F::first(corr);
    }
    m = chunk_max;
  }
  V lsum = F::zero();
  const V vm = F::set1(m);
  for (int i = 0; i < cntw; i += W) {
    const V e = F::exp(F::sub(F::load(s + i), vm));
    F::store(s + i, e);
    lsum = F::add(lsum, e);
  }
  l += F::hsum(lsum);
}

// One chunk of a job: scores, softmax step and value sums for every token that sees a slot of it,
// K and V read through `k` and `v` (row i: slot 64w + i).
template <class F, class Rows>
void attend_rows(const attend_job& j, const attend_parts& sp, int64_t w, const Rows& k, const Rows& v, bool padded_q) {
  constexpr size_t c = attend_chunk;
  bool fetched = false;  // the first token that sees the chunk prefetches for the tile
  for (int t = 0; t < j.n_tok; ++t) {
    const uint64_t bits = j.vis_bits(t, w);
    if (!bits) continue;
    const bool ahead = !std::exchange(fetched, true);
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
      tile_scores<F, R>(q, k, sp.pk, (cnt_t + F::W - 1) / F::W * F::W, cnt_t - 1, s, ahead && h0 == 0);
    });
    for (int h = 0; h < j.n_q; ++h) {
      const size_t r = size_t(r0 + h);
      softmax_step<F>(j, bits, cnt_t, sp.scores + r * c, sp.m[r], sp.l[r], sp.acc + r * sp.pv, sp.pv);
    }
    row_tiles(j.n_q, [&](auto R, int h0) {
      const float* e[R];
      float* a[R];
      for (int r = 0; r < R; ++r) {
        e[r] = sp.scores + size_t(r0 + h0 + r) * c;
        a[r] = sp.acc + size_t(r0 + h0 + r) * sp.pv;
      }
      tile_values<F, R>(e, v, sp.pv, cnt_t, a, ahead && h0 == 0);
    });
  }
}

template <class F>
void attend(const attend_job& j, float* scratch) {
  constexpr size_t c = attend_chunk;
  const attend_parts sp = attend_begin(j, scratch, F::W);
  const size_t pk = sp.pk, pv = sp.pv;
  // The tiles read W dimensions at a time: query rows whose length is not a multiple of W are
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
    for (int t = 0; t < j.n_tok; ++t) any |= j.vis_bits(t, w);
    if (!any) continue;
    const int64_t s0 = w * int64_t(c);
    if (tails) {
      // Slots past the last visible one are not converted (a short context in a long cache, the
      // causal edge of a prefill tile): the chunk ends at the highest bit of the tile.
      const int cnt = visible_extent(any);
      const size_t elem = j.f16 ? 2 : 4;
      for (int i = 0; i < cnt; ++i) {
        prefetch_row(j.k, j.k_stride * int64_t(elem), s0 + i, size_t(j.dk) * elem);
        prefetch_row(j.v, j.v_stride * int64_t(elem), s0 + i, size_t(j.dv) * elem);
        for (size_t d0 = 0; d0 < pk; d0 += F::W) load_padded<F>(j, j.k, j.k_stride, s0 + i, int(d0), j.dk, sp.kc + size_t(i) * pk + d0);
        for (size_t d0 = 0; d0 < pv; d0 += F::W) load_padded<F>(j, j.v, j.v_stride, s0 + i, int(d0), j.dv, sp.vc + size_t(i) * pv + d0);
      }
      attend_rows<F>(j, sp, w, converted_rows<F>{{sp.kc, int64_t(pk)}}, converted_rows<F>{{sp.vc, int64_t(pv)}}, true);
    } else if (j.f16) {
      const auto* k = static_cast<const uint16_t*>(j.k) + s0 * j.k_stride;
      const auto* v = static_cast<const uint16_t*>(j.v) + s0 * j.v_stride;
      attend_rows<F>(j, sp, w, f16_rows<F>{k, j.k_stride}, f16_rows<F>{v, j.v_stride}, false);
    } else {
      const auto* k = static_cast<const float*>(j.k) + s0 * j.k_stride;
      const auto* v = static_cast<const float*>(j.v) + s0 * j.v_stride;
      attend_rows<F>(j, sp, w, f32_rows<F>{k, j.k_stride}, f32_rows<F>{v, j.v_stride}, false);
    }
  }
  attend_output(j, sp);
}

}  // namespace
}  // namespace glia::cpu
