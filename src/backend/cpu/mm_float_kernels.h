// Matmul kernels for F16, BF16 and F32 weights (AVX2 + FMA + F16C, or AVX-512), bit-exact twins of the
// reference dot products (quant/float_types.cpp): per output, float_dot_segments chains of float
// FMAs (acc = fma(w, a, acc)) over contiguous segments of the row, their sums added in order.
// F16 and BF16 activations come in the weights' type (dot_type); all three are widened to float
// once per matmul (mm_kernel::widen) into an element-major layout: a tile's tokens have element k
// side by side, so one pointer addresses them all (a pointer per token would not fit the general
// registers next to the vector ones) and each product is a broadcast operand of an FMA.
// Panel layout of 8 rows: element k of the 8 rows side by side, [k][row], the file's bytes
// rearranged (compact): one load gives element k of every row, to multiply with element k of an
// activation broadcast to all lanes. A panel's 8 sums are one 256-bit vector (rows8); with AVX-512,
// two consecutive panels share a 512-bit vector (rows16), so every FMA does 16 rows.
// One token (decode) runs its segments side by side: 4 independent chains, each waiting on the FMA
// latency (4 cycles) at every element, enough for memory's pace. More tokens run the segments one
// after another in tiles of float_tile_tokens, each token's chain independent of the others'.
// Included by one .cpp per instruction set (compiled with that ISA's flags; see simd_avx2.h for why
// everything here has internal linkage).
#pragma once

#include "backend/cpu/panel_vectors.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

inline __m256 vfma(__m256 w, const float* a, __m256 acc) { return _mm256_fmadd_ps(w, _mm256_set1_ps(*a), acc); }
#ifdef GLIA_PANEL_PAIRS
inline __m512 vfma(__m512 w, const float* a, __m512 acc) { return _mm512_fmadd_ps(w, _mm512_set1_ps(*a), acc); }
#endif

// Element k of a panel's 8 rows (bytes at p), and of the next panel's at p + second for rows16.
struct f16_elems {
  static constexpr dtype type = dtype::f16;
  static constexpr size_t bytes = 2;
  template <class V>
  static typename V::f load(const uint8_t* p, size_t second) {
    return V::halves(p, second);
  }
  static float one(const uint8_t* p) { return half_to_float(uint16_t(p[0] | p[1] << 8)); }
};
struct bf16_elems {
  static constexpr dtype type = dtype::bf16;
  static constexpr size_t bytes = 2;
  template <class V>
  static typename V::f load(const uint8_t* p, size_t second) {
#ifdef GLIA_PANEL_PAIRS
    if constexpr (std::is_same_v<V, rows16>) {
      const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(p)), load128(p + second), 1);
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else
#endif
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
  }
  static float one(const uint8_t* p) {
    const uint32_t u = uint32_t(p[0] | p[1] << 8) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};
struct f32_elems {
  static constexpr dtype type = dtype::f32;
  static constexpr size_t bytes = 4;
  template <class V>
  static typename V::f load(const uint8_t* p, size_t second) {
#ifdef GLIA_PANEL_PAIRS
    if constexpr (std::is_same_v<V, rows16>) {
      const __m512d lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(reinterpret_cast<const float*>(p))));
      return _mm512_castpd_ps(
          _mm512_insertf64x4(lo, _mm256_castps_pd(_mm256_loadu_ps(reinterpret_cast<const float*>(p + second))), 1));
    } else
#endif
      return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
  static float one(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
};


// ---- Packing -------------------------------------------------------------------------------------

// Rows [r0, r0 + n_rows) of w as a panel [k][8 rows] for k in [k0, k1), at out (8 * bytes per k).
template <size_t Bytes>
void pack_range(const weight_view& w, int64_t r0, int n_rows, int64_t k0, int64_t k1, uint8_t* out) {
  const uint8_t* rows[8];
  group_rows(w, r0, n_rows, rows);
  int64_t k = k0;
  // Eight elements of the 8 rows at a time, transposed in registers: as 32-bit cells directly for
  // F32; for 16-bit elements, pairs of rows interleaved first so that each 32-bit cell holds
  // element k of rows 2i and 2i + 1.
  for (; k + 8 <= k1; k += 8, out += 64 * Bytes) {
    __m256i v[8];
    if constexpr (Bytes == 4) {
      for (int r = 0; r < 8; ++r) v[r] = load256(rows[r] + 4 * k);
      transpose_8x8_i32(v);
      for (int c = 0; c < 8; ++c) store256(out + 32 * c, v[c]);
    } else {
      __m256i pair[4];
      for (int i = 0; i < 4; ++i) {
        const __m128i a = load128(rows[2 * i] + 2 * k), b = load128(rows[2 * i + 1] + 2 * k);
        // Cells: element j of rows 2i, 2i + 1 for j = 0..7.
        pair[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(a, b)),
                                          _mm_unpackhi_epi16(a, b), 1);
      }
      // As 8x8 cells: row i of the matrix = pair i (cells j = 0..7), rows 4-7 unused.
      for (int i = 0; i < 4; ++i) v[i] = pair[i];
      for (int i = 4; i < 8; ++i) v[i] = _mm256_setzero_si256();
      transpose_8x8_i32(v);
      // v[j] now holds element j as cells of row pairs 0-3 in its low 16 bytes.
      for (int j = 0; j < 8; ++j)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * j), _mm256_castsi256_si128(v[j]));
    }
  }
  for (; k < k1; ++k, out += 8 * Bytes)
    for (int r = 0; r < 8; ++r) std::memcpy(out + Bytes * r, rows[r] + Bytes * k, Bytes);
}

template <class E>
void pack(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_range<E::bytes>(w, r0, n_rows, 0, w.n_in, out);
}

// ---- Tiles ---------------------------------------------------------------------------------------

constexpr size_t panel_elem(size_t bytes) { return 8 * bytes; }

// Segment bounds of a row of n elements.
struct segments {
  int64_t begin[float_dot_segments], len[float_dot_segments], common;
  explicit segments(int64_t n) : common(n) {
    for (int s = 0; s < float_dot_segments; ++s) {
      begin[s] = float_dot_segment(n, s);
      len[s] = float_dot_segment(n, s + 1) - begin[s];
      common = std::min(common, len[s]);
    }
  }
};

// One token's sums of a whole panel (V: one panel or two), the segments side by side.
template <class E, class V>
typename V::f panel_one_token(const uint8_t* panel, size_t second, int64_t n, const float* a, int64_t as) {
  using F = typename V::f;
  constexpr size_t step = panel_elem(E::bytes);
  constexpr int S = float_dot_segments;
  const segments seg(n);
  F acc[S];
  for (int s = 0; s < S; ++s) acc[s] = V::zero_f();
  // A cache line of each segment per round, its next line asked for a little ahead.
  constexpr int64_t per_line = int64_t(64 / step);
  int64_t i = 0;
  for (; i + per_line <= seg.common; i += per_line) {
    for (int s = 0; s < S; ++s) {
      const uint8_t* line = panel + size_t(seg.begin[s] + i) * step + 1024;
      _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
      if constexpr (!std::is_same_v<V, rows8>) _mm_prefetch(reinterpret_cast<const char*>(line + second), _MM_HINT_T0);
    }
    for (int64_t u = 0; u < per_line; ++u)
      for (int s = 0; s < S; ++s) {
        const int64_t k = seg.begin[s] + i + u;
        acc[s] = vfma(E::template load<V>(panel + size_t(k) * step, second), a + k * as, acc[s]);
      }
  }
  for (int s = 0; s < S; ++s)
    for (int64_t j = i; j < seg.len[s]; ++j) {
      const int64_t k = seg.begin[s] + j;
      acc[s] = vfma(E::template load<V>(panel + size_t(k) * step, second), a + k * as, acc[s]);
    }
  F total = V::zero_f();
  for (int s = 0; s < S; ++s) total = vadd(total, acc[s]);
  return total;
}

// T tokens over elements [k0, k1) of a panel whose element k0 is at p, the tokens' element k at
// a + k * as + t: acc[t] += the products.
template <class E, class V, int T>
void panel_range(const uint8_t* p, size_t second, int64_t k0, int64_t k1, const float* a, int64_t as,
                 typename V::f acc[T]) {
  constexpr size_t step = panel_elem(E::bytes);
  a += k0 * as;
  for (int64_t k = k0; k < k1; ++k, p += step, a += as) {
    const auto w = E::template load<V>(p, second);
    for (int t = 0; t < T; ++t) acc[t] = vfma(w, a + t, acc[t]);
  }
}

// T tokens (t0...) of a whole panel (pair): one token's segments side by side; more tokens' one
// segment after another. The signature of the quantized kernels' tiles (gemm_panels).
template <class E, int T, class V>
struct float_tile {
  static void run(const uint8_t* panel, size_t second, int64_t n, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n_rows) {
    using F = typename V::f;
    // A tile straddling two blocks of the widened activations (not from gemm_panels, whose tiles
    // start at block boundaries) goes token by token: the same chains, so the same bits.
    if (T <= gemv_max_tokens || t0 % a.wide_tokens + T > a.wide_tokens) {
      for (int t = 0; t < T; ++t)
        V::store(y + size_t(t) * ys, panel_one_token<E, V>(panel, second, n, a.wide_at(t0 + t), a.wide_tokens), n_rows);
      return;
    }
    const float* at = a.wide_at(t0);
    F total[T];
    for (int t = 0; t < T; ++t) total[t] = V::zero_f();
    for (int s = 0; s < float_dot_segments; ++s) {
      const int64_t k0 = float_dot_segment(n, s), k1 = float_dot_segment(n, s + 1);
      F acc[T];
      for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
      panel_range<E, V, T>(panel + size_t(k0) * panel_elem(E::bytes), second, k0, k1, at, a.wide_tokens, acc);
      for (int t = 0; t < T; ++t) total[t] = vadd(total[t], acc[t]);
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, total[t], n_rows);
  }
};
template <int T, class V>
using f16_tile = float_tile<f16_elems, T, V>;
template <int T, class V>
using bf16_tile = float_tile<bf16_elems, T, V>;
template <int T, class V>
using f32_tile = float_tile<f32_elems, T, V>;

// Tokens per prefill tile: one accumulator register per token, next to the weights and a broadcast
// (AVX2 has 16 registers, AVX-512 32).
#ifdef GLIA_PANEL_PAIRS
constexpr int float_tile_tokens = 16;
#else
constexpr int float_tile_tokens = 12;
#endif

template <class E, template <int, class> class Tile>
void gemm(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, const act_rows& a, int64_t t0,
          int64_t n_tok, float* y, size_t ys, int last_rows) {
  gemm_panels<Tile, panel_pairs, act_rows, float_tile_tokens>(panels, panel_bytes, n_panels, nb, a, t0, n_tok,
                                                                      y, ys, last_rows);
}

// Unprepared weights, 1-3 tokens: a chunk of each segment of an 8-row group packed at a time into
// small buffers on the stack, the segments side by side (as panel_one_token: one chain per segment
// and token; the chunks keep each chain's order).
template <class E, int T>
void gemv_group(const weight_view& w, int64_t g, int n_rows, const act_rows& a, int64_t t0, float* y, size_t ys) {
  constexpr int64_t chunk = 128;
  constexpr int S = float_dot_segments;
  constexpr size_t step = panel_elem(E::bytes);
  alignas(64) uint8_t buf[S][chunk * step];
  const segments seg(w.n_in);
  const float* at[T];
  for (int t = 0; t < T; ++t) at[t] = a.wide_at(t0 + t);
  __m256 acc[S][T];
  for (int s = 0; s < S; ++s)
    for (int t = 0; t < T; ++t) acc[s][t] = _mm256_setzero_ps();
  for (int64_t c = 0, longest = *std::max_element(seg.len, seg.len + S); c < longest; c += chunk) {
    int64_t m[S], common = chunk;
    for (int s = 0; s < S; ++s) {
      m[s] = std::clamp<int64_t>(seg.len[s] - c, 0, chunk);
      common = std::min(common, m[s]);
      if (m[s] > 0) pack_range<E::bytes>(w, g, n_rows, seg.begin[s] + c, seg.begin[s] + c + m[s], buf[s]);
    }
    // The sums in registers between the packing calls: kept in `acc` across those calls, GCC stored
    // each one to the stack after every multiply-add (one store per multiply-add).
    __m256 r[S][T];
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) r[s][t] = acc[s][t];
    const auto madd = [&](int s, int64_t i) {
      const __m256 wv = E::template load<rows8>(buf[s] + size_t(i) * step, 0);
      const int64_t k = (seg.begin[s] + c + i) * a.wide_tokens;
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) r[s][t] = vfma(wv, at[t] + k, r[s][t]);
    };
    for (int64_t i = 0; i < common; ++i)
#pragma GCC unroll 4
      for (int s = 0; s < S; ++s) madd(s, i);
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
      for (int64_t i = common; i < m[s]; ++i) madd(s, i);
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[s][t] = r[s][t];
  }
  for (int t = 0; t < T; ++t) {
    __m256 total = _mm256_setzero_ps();
    for (int s = 0; s < S; ++s) total = _mm256_add_ps(total, acc[s][t]);
    store_lanes(y + size_t(t) * ys, total, n_rows);
  }
}

template <class E>
void gemv(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, int64_t n_tok, float* y,
          size_t ys) {
  for (int64_t g = r0; g < r1; g += 8) {
    const int n = int(std::min<int64_t>(8, r1 - g));
    float* yg = y + (g - r0);
    token_tiles<gemv_max_tokens>(n_tok, [&](auto tile, int64_t t) {
      gemv_group<E, decltype(tile)::value>(w, g, n, a, t0 + t, yg + size_t(t) * ys, ys);
    });
  }
}

// ---- One row, and the activations widened --------------------------------------------------------

// The dot of one row with one activation row in dot_type (the spec the panel kernels are tested
// against, and the kernel table's vec_dot): the four segments in the four lanes of a vector while
// all have elements left, then the longer ones' last element in scalar code.
template <class E>
float dot_row(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const uint8_t*>(wv);
  const auto* a = static_cast<const uint8_t*>(av);
  static_assert(float_dot_segments == 4, "one lane per segment");
  const segments seg(n);
  const auto at = [&](const uint8_t* p, int s, int64_t i) { return E::one(p + E::bytes * (seg.begin[s] + i)); };
  __m128 acc = _mm_setzero_ps();
  for (int64_t i = 0; i < seg.common; ++i)
    acc = _mm_fmadd_ps(_mm_setr_ps(at(w, 0, i), at(w, 1, i), at(w, 2, i), at(w, 3, i)),
                       _mm_setr_ps(at(a, 0, i), at(a, 1, i), at(a, 2, i), at(a, 3, i)), acc);
  alignas(16) float lane[4];
  _mm_store_ps(lane, acc);
  float total = 0;
  for (int s = 0; s < 4; ++s) {
    for (int64_t i = seg.common; i < seg.len[s]; ++i) lane[s] = std::fma(at(w, s, i), at(a, s, i), lane[s]);
    total += lane[s];
  }
  return total;
}

// An activation row in dot_type as floats (exact), element k at out[k * stride].
template <class E>
void widen(const uint8_t* row, int64_t n, float* out, int64_t stride) {
  for (int64_t k = 0; k < n; ++k) out[k * stride] = E::one(row + E::bytes * k);
}

template <class E, template <int, class> class Tile>
constexpr mm_kernel float_kernel() {
  mm_kernel k{E::type, 1, E::bytes, E::type, E::bytes, false, panel_elem(E::bytes), pack<E>, gemm<E, Tile>, gemv<E>,
              nullptr, dot_row<E>};
  k.widen = widen<E>;
  k.wide_block = float_tile_tokens;
  return k;
}

constexpr mm_kernel float_kernels[] = {
    float_kernel<f16_elems, f16_tile>(),
    float_kernel<bf16_elems, bf16_tile>(),
    float_kernel<f32_elems, f32_tile>(),
};

}  // namespace
}  // namespace glia::cpu
