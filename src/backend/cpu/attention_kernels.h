// The attend kernel (cpu_kernels.h attend_job), written once against a float vector of W lanes:
// f32x8 (AVX2) and f32x16 (AVX-512 builds). Per chunk of 64 slots: scores from K transposed, the
// slots side by side for each dimension (the CPU backend stores K so, kv_order::head_major_kt; K in
// rows is transposed per chunk into scratch), by register tiles of R query rows x N vectors of
// slots: one multiply-add chain per score over the dimensions in order, no reduction across lanes,
// the same bits for any tile or width, each K vector converted once for the R rows (a GQA group).
// Then the softmax weights with a vector exp, and the weighted V rows summed by tiles of R query
// rows x 2W dimensions (per output lane one multiply-add chain over the slots in order), V read
// where it lies in the cache and fp16 converted in the tiles (only heads whose length is not a
// multiple of W are converted per chunk, zero-padded). Every row's result is independent of the
// other rows of its job (batch invariance); the two widths sum the values and the softmax in
// different orders, so they agree with each other and with the scalar twin only up to float
// reassociation and the exp approximation.
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
  // Score tiles: up to 4 query rows x 2 vectors of slots (8 accumulators, 2 K vectors and a
  // broadcast: 11 of the 16 registers; tiles of fewer rows take up to 4 vectors). Each K vector
  // converted from fp16 serves 4 rows: 2 x 4 took 8% longer on a Sapphire-Rapids-class core
  // (AttentionPerf), where the conversion shares the ports of the multiply-adds.
  static constexpr int score_rows = 4, score_accumulators = 8;
  static constexpr int value_rows = 4;  // value tiles: R x 2 accumulators
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
  // Score tiles: up to 8 query rows (a GQA group of 8 converts each K vector once) x 2 vectors of
  // slots, or 4 x 4; 16 accumulators (the broadcast is the multiply-add's memory operand).
  static constexpr int score_rows = 8, score_accumulators = 16;
  static constexpr int value_rows = 8;  // value tiles: R x 2 accumulators
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

// Elements [d0, d0 + W) of row `slot` of a K or V buffer as floats, zero past n (heads whose
// length is not a multiple of W).
template <class F>
typename F::v load_padded(const attend_job& j, const void* base, int64_t stride, int64_t slot, int d0, int n) {
  const int64_t off = slot * stride + d0;
  if (d0 + F::W <= n) return j.f16 ? F::halves(static_cast<const uint16_t*>(base) + off) : F::loadu(static_cast<const float*>(base) + off);
  alignas(64) float padded[F::W];
  for (int d = 0; d < F::W; ++d) padded[d] = d0 + d < n ? kv_element(j, base, off + d) : 0.0f;
  return F::load(padded);
}

// A cache row `attend_prefetch_slots` slots past row i is asked for while row i is read: a decode step
// meets its layer's K and V in memory (the step's weights have streamed through the caches since),
// and the hardware prefetchers alone read them at 7-11 GB/s. `AttentionPerf` "from memory" (2048
// slots, 2 threads, AVX-512, session 25): slot-major rows 0.23 -> 0.19 ms with the prefetch;
// head-major rows (the CPU's layout then) 0.20-0.23 -> 0.16. 16 slots: 2 KiB of a 64-dim fp16 head
// ahead of the reads; 8 and 32 measured the same. It serves V, and K stored in rows (K stored
// transposed: kt_chunk::prefetch_next).
inline constexpr int attend_prefetch_slots = 16;
// Rows `stride` bytes apart: the `bytes` of row i + attend_prefetch_slots.
inline void prefetch_row(const void* base, int64_t stride, int64_t i, size_t bytes) {
  // In integers: the row past the cache's end is never read, and a prefetch does not fault.
  const uintptr_t first = reinterpret_cast<uintptr_t>(base) + uintptr_t((i + attend_prefetch_slots) * stride);
  for (uintptr_t line = first & ~uintptr_t(63); line < first + bytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
}

// The V rows of one KV head as the value tiles read them: W elements of row i from dimension d as
// floats, and prefetch(i, n) asks for the n elements of the row attend_prefetch_slots further on.
// Rows are either the cache's own (fp16 or f32, `stride` elements apart) or a chunk converted into
// scratch (f32, stride pv; the conversion prefetches the cache rows instead).
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

// K rows [0, cnt) of a chunk (row i: slot s0 + i of the job) transposed into kt as floats: element
// d of row i at kt[d * attend_chunk + i] for d < dk, columns [cnt, cnt rounded up to W) zero.
// Prefetches the rows attend_prefetch_slots ahead (the next chunk's first rows from the last ones).
template <class F>
void transpose_k(const attend_job& j, int64_t s0, int cnt, float* kt) {
  using V = typename F::v;
  constexpr int W = F::W;
  const size_t elem = j.f16 ? 2 : 4;
  for (int i0 = 0; i0 < cnt; i0 += W) {
    const int rows = std::min(W, cnt - i0);
    for (int i = 0; i < rows; ++i) prefetch_row(j.k, j.k_stride * int64_t(elem), s0 + i0 + i, size_t(j.dk) * elem);
    for (int d0 = 0; d0 < j.dk; d0 += W) {
      V r[W];
      for (int i = 0; i < W; ++i) r[i] = i < rows ? load_padded<F>(j, j.k, j.k_stride, s0 + i0 + i, d0, j.dk) : F::zero();
      F::transpose(r);
      for (int d = 0; d < std::min(W, j.dk - d0); ++d) F::store(kt + size_t(d0 + d) * attend_chunk + i0, r[d]);
    }
  }
}

// A chunk's K transposed (kv_order::head_major_kt, or transpose_k's scratch) as the score tiles read
// it: W slots from slot i of dimension d as floats; prefetch_next(d) asks for dimension d of the
// next chunk (the cache's own chunks; `next` 0: none, the scratch).
template <class F, class T>
struct kt_chunk {
  const T* base;     // dimension 0, slot 0 of the chunk
  int64_t next = 0;  // elements to the next chunk's start
  typename F::v load(int d, int i) const {
    const T* p = base + size_t(d) * attend_chunk + size_t(i);
    if constexpr (std::is_same_v<T, uint16_t>) {
      return F::halves(p);
    } else {
      return F::loadu(p);
    }
  }
  void prefetch_next(int d) const {
    if (next == 0) return;
    // In integers: past the last chunk lies no object (a prefetch does not fault).
    const uintptr_t row = reinterpret_cast<uintptr_t>(base) + uintptr_t(next + int64_t(d) * attend_chunk) * sizeof(T);
    for (uintptr_t b = 0; b < attend_chunk * sizeof(T); b += 64) _mm_prefetch(reinterpret_cast<const char*>(row + b), _MM_HINT_T0);
  }
};

// Scores of R query rows against the slots [i0, i0 + N * W) of a transposed chunk kt:
// s[r][i] = q[r] . k_i, slots in the lanes, one multiply-add chain per score over d = 0..dk-1 in
// order, so a score's bits depend neither on the tile nor on the vector width. `ahead`: prefetch
// the next chunk (one tile of each chunk does).
template <class F, int R, int N, class KT>
void tile_scores(const float* const q[R], const KT& kt, int dk, int i0, float* const s[R], bool ahead) {
  using V = typename F::v;
  // Unrolled by pragma: left to GCC's later unrolling, the accumulator array stayed in memory and
  // every multiply-add was followed by a store of its accumulator to the stack (AVX2: 8 stores per
  // 8 multiply-adds, so the stores and not the multiply-adds bounded the loop).
  V a[R][N];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) a[r][n] = F::zero();
  for (int d = 0; d < dk; ++d) {
    if (ahead) kt.prefetch_next(d);
    V k[N];
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) k[n] = kt.load(d, i0 + n * F::W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const V qd = F::bcast(q[r] + d);
#pragma GCC unroll 16
      for (int n = 0; n < N; ++n) a[r][n] = F::fmadd(qd, k[n], a[r][n]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) F::store(s[r] + i0 + n * F::W, a[r][n]);
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

// Groups of [0, n) of Max (8, 4 or 2), then at most one each of 4 (after 8), 2 and 1:
// f(integral_constant<size>, first).
template <int Max = 4, typename Fn>
void row_tiles(int n, Fn&& f) {
  static_assert(Max == 8 || Max == 4 || Max == 2);
  int r = 0;
  for (; r + Max <= n; r += Max) f(std::integral_constant<int, Max>{}, r);
  if constexpr (Max > 4) {
    if (r + 4 <= n) {
      f(std::integral_constant<int, 4>{}, r);
      r += 4;
    }
  }
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

// One chunk of a job: scores from the chunk's transposed K (kt), softmax step and value sums for
// every token that sees a slot of it, V read through `v` (row i: slot 64w + i).
template <class F, class KT, class Rows>
void attend_rows(const attend_job& j, const attend_parts& sp, int64_t w, const KT& kt, const Rows& v) {
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
    const int n_vec = (cnt_t + F::W - 1) / F::W;
    row_tiles<F::score_rows>(j.n_q, [&](auto R, int h0) {
      const float* q[R];
      float* s[R];
      for (int r = 0; r < R; ++r) {
        q[r] = j.q + t * j.q_stride + int64_t(h0 + r) * j.dk;
        s[r] = sp.scores + size_t(r0 + h0 + r) * c;
      }
      row_tiles<std::min(4, F::score_accumulators / R)>(n_vec, [&](auto N, int n0) { tile_scores<F, R, N>(q, kt, j.dk, n0 * F::W, s, ahead && h0 == 0 && n0 == 0); });
    });
    for (int h = 0; h < j.n_q; ++h) {
      const size_t r = size_t(r0 + h);
      softmax_step<F>(j, bits, cnt_t, sp.scores + r * c, sp.m[r], sp.l[r], sp.acc + r * sp.pv, sp.pv);
    }
    row_tiles<F::value_rows>(j.n_q, [&](auto R, int h0) {
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
  const attend_parts sp = attend_begin(j, scratch, F::W);
  const size_t pv = sp.pv;
  // The value tiles read W dimensions at a time: V rows whose length is not a multiple of W are
  // converted per chunk, zero-padded.
  const bool v_tails = size_t(j.dv) != pv;
  for (int64_t w = 0; w < j.vis_words; ++w) {
    uint64_t any = 0;
    for (int t = 0; t < j.n_tok; ++t) any |= j.vis_bits(t, w);
    if (!any) continue;
    const int64_t s0 = w * int64_t(attend_chunk);
    // Slots past the last visible one are not read (a short context in a long cache, the causal
    // edge of a prefill tile): the chunk ends at the highest bit of the tile.
    const int cnt = visible_extent(any);
    auto with_keys = [&](const auto& kt) {
      if (v_tails) {
        const size_t elem = j.f16 ? 2 : 4;
        for (int i = 0; i < cnt; ++i) {
          prefetch_row(j.v, j.v_stride * int64_t(elem), s0 + i, size_t(j.dv) * elem);
          for (size_t d0 = 0; d0 < pv; d0 += F::W) F::store(sp.vc + size_t(i) * pv + d0, load_padded<F>(j, j.v, j.v_stride, s0 + i, int(d0), j.dv));
        }
        attend_rows<F>(j, sp, w, kt, converted_rows<F>{{sp.vc, int64_t(pv)}});
      } else if (j.f16) {
        attend_rows<F>(j, sp, w, kt, f16_rows<F>{static_cast<const uint16_t*>(j.v) + s0 * j.v_stride, j.v_stride});
      } else {
        attend_rows<F>(j, sp, w, kt, f32_rows<F>{static_cast<const float*>(j.v) + s0 * j.v_stride, j.v_stride});
      }
    };
    const int64_t chunk = int64_t(j.dk) * attend_chunk;  // elements of a transposed chunk
    if (!j.k_chunks) {
      transpose_k<F>(j, s0, cnt, sp.kc);
      with_keys(kt_chunk<F, float>{sp.kc});
    } else if (j.f16) {
      with_keys(kt_chunk<F, uint16_t>{static_cast<const uint16_t*>(j.k) + w * chunk, chunk});
    } else {
      with_keys(kt_chunk<F, float>{static_cast<const float*>(j.k) + w * chunk, chunk});
    }
  }
  attend_output(j, sp);
}

}  // namespace
}  // namespace glia::cpu
