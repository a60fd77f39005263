// The attend kernel (cpu_kernels.h attend_job), written once against a float vector of W lanes:
// f32x8 (AVX2) and f32x16 (AVX-512 builds) in attention_vectors_x86.h, f32x4 (NEON) in
// attention_neon.cpp. Per chunk of 64 slots: scores from K transposed, the
// slots side by side for each dimension (the CPU backend stores K so, kv_order::head_major_kt; K in
// rows is transposed per chunk into scratch), by register tiles of R query rows x N vectors of
// slots: one multiply-add chain per score over the dimensions in order, then times the scale, no
// reduction across lanes, the same bits for any tile or width, each K vector converted once for the
// R rows (a GQA group). Then the softmax weights with a vector exp, and the weighted V rows summed by
// tiles of R query rows x value_vectors vectors of dimensions (then 2, then 1; per output lane one
// multiply-add chain over the slots in order), V read
// where it lies in the cache and fp16 converted in the tiles (only heads whose length is not a
// multiple of W are converted per chunk, zero-padded). Every row's result is independent of the
// other rows of its job (batch invariance); the widths sum the values and the softmax in
// different orders, so they agree with each other and with the scalar twin only up to float
// reassociation and the exp approximation.
//
// A vector type F provides: v (the register type), W (lanes), zero, set1, loadu, load (a scratch
// row, aligned to W floats up to 32 bytes), store, bcast (one float to every lane), halves (W fp16
// values as floats), fmadd (a * b + c, fused), mul, sub, add, max, exp (e^x lane-wise), first
// (lane 0), hmax, hsum, keep_live (x where bit k of the word is set, -inf elsewhere), transpose (of
// W vectors), and the tile sizes score_rows, score_accumulators, value_rows and value_vectors (what
// its register file holds).
// Included by one .cpp per instruction set, which defines its F and instantiates attend<F>:
// everything has internal linkage (see simd_avx2.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

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
// A read of the line at address `a` into the first-level cache (prefetcht0 on x86, prfm pldl1keep on
// AArch64); never faults, so it may point past an object.
inline void prefetch_l1(uintptr_t a) { __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3); }
// Rows `stride` bytes apart: the `bytes` of row i + attend_prefetch_slots.
inline void prefetch_row(const void* base, int64_t stride, int64_t i, size_t bytes) {
  // In integers: the row past the cache's end is never read, and a prefetch does not fault.
  const uintptr_t first = reinterpret_cast<uintptr_t>(base) + uintptr_t((i + attend_prefetch_slots) * stride);
  for (uintptr_t line = first & ~uintptr_t(63); line < first + bytes; line += 64)
    prefetch_l1(line);
}

// The V rows of one KV head as the value tiles read them: row i at base + i * stride, load(p) the W
// elements at p as floats, and prefetch(i, n) asks for the n elements of the row
// attend_prefetch_slots further on. Rows are either the cache's own (fp16 or f32, `stride` elements
// apart) or a chunk converted into scratch (f32, stride pv; the conversion prefetches the cache rows
// instead).
template <class F>
struct f16_rows {
  const uint16_t* base;
  int64_t stride;
  static typename F::v load(const uint16_t* p) { return F::halves(p); }
  void prefetch(int64_t i, size_t n) const { prefetch_row(base, stride * 2, i, n * 2); }
};
template <class F>
struct f32_rows {
  const float* base;
  int64_t stride;
  static typename F::v load(const float* p) { return F::loadu(p); }
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
    for (uintptr_t b = 0; b < attend_chunk * sizeof(T); b += 64) prefetch_l1(row + b);
  }
};

// The register tiles' step, an outer product added in: a[r][n] += b[r][at] * x[n] (one multiply-add
// on each accumulator's chain).
template <class F, int R, int N>
[[gnu::always_inline]] inline void add_outer(typename F::v (&a)[R][N], const typename F::v (&x)[N], const float* const b[R], int64_t at) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    const typename F::v br = F::bcast(b[r] + at);
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) a[r][n] = F::fmadd(br, x[n], a[r][n]);
  }
}

// Scores of R query rows against the slots [i0, i0 + N * W) of a transposed chunk kt:
// s[r][i] = (q[r] . k_i) * scale, slots in the lanes, one multiply-add chain per score over d = 0..dk-1 in
// order, so a score's bits depend neither on the tile nor on the vector width. Ahead: prefetch the
// next chunk (one tile of each chunk does); a template parameter, so that the other tiles' loops
// carry no test for it.
template <class F, int R, int N, bool Ahead, class KT>
void tile_scores(const float* const q[R], const KT& kt, int dk, int i0, float scale, float* const s[R]) {
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
    if constexpr (Ahead) kt.prefetch_next(d);
    V k[N];
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) k[n] = kt.load(d, i0 + n * F::W);
    add_outer<F>(a, k, q, d);
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int n = 0; n < N; ++n) F::store(s[r] + i0 + n * F::W, F::mul(a[r][n], F::set1(scale)));
}

// acc[r][d] += sum_i e[r][i] * v_i[d] over slots i < cnt for R query rows, NV vectors of dimensions
// at a time in registers (the rest fewer): per output lane one multiply-add chain over the slots in
// order. Fetch: prefetch `fetch` elements of the rows to come (the first block does); a template
// parameter, and rows reached by stepping an offset rather than multiplying i * stride, so that the
// loop holds little beside the loads and the multiply-adds.
template <class F, int R, int NV, bool Fetch, class Rows>
void tile_values_block(const float* const e[R], const Rows& v, size_t d, int cnt, float* const acc[R], size_t fetch) {
  using V = typename F::v;
  constexpr size_t W = F::W;
  V a[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) a[r][k] = F::load(acc[r] + d + W * k);
  int64_t row = int64_t(d);  // in elements from base: no pointer past the rows after the last one
  for (int i = 0; i < cnt; ++i, row += v.stride) {
    if constexpr (Fetch) v.prefetch(i, fetch);
    V x[NV];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) x[k] = Rows::load(v.base + row + int64_t(W) * k);
    add_outer<F>(a, x, e, i);
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) F::store(acc[r] + d + W * k, a[r][k]);
}

// acc[r][d] += sum_i e[r][i] * v_i[d] for every d < pv, in blocks of value_vectors, 2 and 1
// vectors; `ahead`: the first block prefetches the rows to come.
template <class F, int R, class Rows>
void tile_values(const float* const e[R], const Rows& v, size_t pv, int cnt, float* const acc[R], bool ahead) {
  constexpr size_t W = F::W;
  constexpr int NV = F::value_vectors;
  // Blocks of NV vectors, then of 2 and 1; the first prefetches the rows to come.
  auto blocks = [&](auto nv, size_t& d) {
    for (; d + nv * W <= pv; d += nv * W) {
      if (ahead) {
        tile_values_block<F, R, nv, true>(e, v, d, cnt, acc, pv);
        ahead = false;
      } else {
        tile_values_block<F, R, nv, false>(e, v, d, cnt, acc, 0);
      }
    }
  };
  size_t d = 0;
  blocks(std::integral_constant<int, NV>{}, d);
  if constexpr (NV > 2) blocks(std::integral_constant<int, 2>{}, d);
  if constexpr (NV > 1) blocks(std::integral_constant<int, 1>{}, d);
}

// Groups of [0, n) of Max (8, 4, 3 or 2), then at most one each of 4 (after 8), 2 and 1:
// f(integral_constant<size>, first).
template <int Max = 4, typename Fn>
void row_tiles(int n, Fn&& f) {
  static_assert(Max == 8 || Max == 4 || Max == 3 || Max == 2);
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

// Softmax step of one row over one chunk: scaled scores s [chunk] become the weights e^(s - m) of
// the visible slots (0 elsewhere); m, l and the row's accumulator are rescaled when the max grows.
template <class F>
void softmax_step(const attend_job& j, uint64_t bits, int cnt, float* s, float& m, float& l, float* acc, size_t pv) {
  using V = typename F::v;
  constexpr int W = F::W;
  const int cntw = (cnt + W - 1) / W * W;
  // Masking is needed only where a slot of the vectors read is not visible (a causal edge, a window,
  // the end of the live slots): not in the chunks a prefill deep in its context mostly reads. A
  // softcap rewrites every score, so it always takes the storing loop.
  const bool all_live = bits == (cntw == attend_chunk ? ~uint64_t(0) : (uint64_t(1) << cntw) - 1);
  V vmax = F::set1(-INFINITY);
  if (all_live && !(j.softcap > 0.0f)) {
    for (int i = 0; i < cntw; i += W) vmax = F::max(vmax, F::load(s + i));
  } else {
    for (int i = 0; i < cntw; i += W) {
      V x = F::load(s + i);
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
      row_tiles<std::min(4, F::score_accumulators / R)>(n_vec, [&](auto N, int n0) {
        if (ahead && h0 == 0 && n0 == 0) {
          tile_scores<F, R, N, true>(q, kt, j.dk, n0 * F::W, j.scale, s);
        } else {
          tile_scores<F, R, N, false>(q, kt, j.dk, n0 * F::W, j.scale, s);
        }
      });
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
