// Matmul kernels for F16, BF16 and F32 weights (AVX2 + FMA + F16C, or AVX-512), bit-exact twins of the
// reference dot products (quant/float_types.cpp): float products summed in double, in
// float_dot_segments chains (quant/types.h) whose sums are added in order at the end.
//  - F16 and BF16 products are exact in float (11- and 8-bit significands), so one double FMA per
//    product rounds exactly as the reference's widening add does; the activations come widened to
//    double once per matmul (mm_kernel::widen), so each product is a broadcast and an FMA.
//  - F32 products round in float first (as the reference's), then widen and add.
// Panel layout of 8 rows: element k of the 8 rows side by side, [k][row], the file's bytes
// rearranged (compact): one load gives element k of every row, to multiply with element k of an
// activation broadcast to all lanes. A panel's 8 sums sit in two vectors of 4 doubles.
// One token (decode) runs the segments side by side: 8 independent chains of FMAs instead of 2,
// since a chain must wait for the adder (4 cycles) at every element. More tokens run the segments
// one after another, each token's chains already independent of the other tokens'.
// Included by one .cpp per instruction set (compiled with that ISA's flags; see simd_avx2.h for why
// everything here has internal linkage): with AVX-512 the 8 sums of a panel fill one 512-bit
// vector, so every FMA does twice the work of AVX2's.
#pragma once

#include "backend/cpu/simd_avx2.h"

#include <algorithm>

#include "backend/cpu/cpu_kernels.h"

namespace glia::cpu {
namespace {

// Sums of a panel's 8 rows, and the operations on them.
#if defined(__AVX512F__)
struct sums8 {
  __m512d v;
};
inline sums8 zero8() { return {_mm512_setzero_pd()}; }
inline sums8 add8(sums8 a, sums8 b) { return {_mm512_add_pd(a.v, b.v)}; }
inline __m256 to_floats(sums8 s) { return _mm512_cvtpd_ps(s.v); }
inline sums8 widen8(__m256 f) { return {_mm512_cvtps_pd(f)}; }
inline sums8 fma8(sums8 w, const double* a, sums8 acc) { return {_mm512_fmadd_pd(w.v, _mm512_set1_pd(*a), acc.v)}; }
#else
struct sums8 {
  __m256d lo, hi;  // rows 0-3, 4-7
};
inline sums8 zero8() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
inline sums8 add8(sums8 a, sums8 b) { return {_mm256_add_pd(a.lo, b.lo), _mm256_add_pd(a.hi, b.hi)}; }
inline __m256 to_floats(sums8 s) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(s.lo)), _mm256_cvtpd_ps(s.hi), 1);
}
inline sums8 widen8(__m256 f) {
  return {_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))};
}
inline sums8 fma8(sums8 w, const double* a, sums8 acc) {
  const __m256d x = _mm256_broadcast_sd(a);
  return {_mm256_fmadd_pd(w.lo, x, acc.lo), _mm256_fmadd_pd(w.hi, x, acc.hi)};
}
#endif

// Element k of 8 rows (panel bytes at p) as doubles, and acc + those times a (the activation's
// element k as double): exact products, so an FMA.
template <class Load>
struct exact_elems {
  using act = double;
  static sums8 load(const uint8_t* p) {
#if !defined(__AVX512F__)
    if constexpr (requires { Load::quad(p); })
      return {_mm256_cvtps_pd(Load::quad(p)), _mm256_cvtps_pd(Load::quad(p + 8))};
#endif
    return widen8(Load::rows(p));
  }
  static sums8 madd(sums8 w, const double* a, sums8 acc) { return fma8(w, a, acc); }
};
struct f16_rows {
  static __m256 rows(const uint8_t* p) { return _mm256_cvtph_ps(load128(p)); }
  static __m128 quad(const uint8_t* p) { return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static float one(const uint8_t* p) { return half_to_float(uint16_t(p[0] | p[1] << 8)); }
};
struct bf16_rows {
  static __m256 rows(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
  }
  static float one(const uint8_t* p) {
    const uint32_t u = uint32_t(p[0] | p[1] << 8) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};
struct f16_elems : exact_elems<f16_rows> {
  static constexpr dtype type = dtype::f16;
  static constexpr size_t bytes = 2;
};
struct bf16_elems : exact_elems<bf16_rows> {
  static constexpr dtype type = dtype::bf16;
  static constexpr size_t bytes = 2;
};
// F32: the product is rounded in float, then widened and added.
struct f32_elems {
  static constexpr dtype type = dtype::f32;
  static constexpr size_t bytes = 4;
  using act = float;
  static __m256 load(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static sums8 madd(__m256 w, const float* a, sums8 acc) {
    return add8(acc, widen8(rounded(_mm256_mul_ps(w, _mm256_broadcast_ss(a)))));
  }
};

// The activation rows a kernel reads: widened to double (F16, BF16) or the f32 rows themselves.
template <class E>
const typename E::act* act_row(const act_rows& a, int64_t t) {
  if constexpr (std::is_same_v<typename E::act, double>) return a.wide + t * a.nb;
  else return reinterpret_cast<const float*>(a.row(t));
}

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

// One token, the segments side by side: the sums of the 8 rows of a whole panel.
template <class E>
sums8 panel_one_token(const uint8_t* panel, int64_t n, const typename E::act* a) {
  constexpr size_t step = panel_elem(E::bytes);
  constexpr int S = float_dot_segments;
  int64_t begin[S], len[S];
  int64_t common = n;
  for (int s = 0; s < S; ++s) {
    begin[s] = float_dot_segment(n, s);
    len[s] = float_dot_segment(n, s + 1) - begin[s];
    common = std::min(common, len[s]);
  }
  sums8 acc[S];
  for (int s = 0; s < S; ++s) acc[s] = zero8();
  // A cache line of each segment per round, its next line asked for a little ahead.
  constexpr int64_t per_line = int64_t(64 / step);
  int64_t i = 0;
  for (; i + per_line <= common; i += per_line) {
    for (int s = 0; s < S; ++s)
      _mm_prefetch(reinterpret_cast<const char*>(panel + size_t(begin[s] + i) * step + 1024), _MM_HINT_T0);
    for (int64_t u = 0; u < per_line; ++u)
      for (int s = 0; s < S; ++s) {
        const int64_t k = begin[s] + i + u;
        acc[s] = E::madd(E::load(panel + size_t(k) * step), a + k, acc[s]);
      }
  }
  for (int s = 0; s < S; ++s)
    for (int64_t j = i; j < len[s]; ++j) {
      const int64_t k = begin[s] + j;
      acc[s] = E::madd(E::load(panel + size_t(k) * step), a + k, acc[s]);
    }
  sums8 total = zero8();
  for (int s = 0; s < S; ++s) total = add8(total, acc[s]);
  return total;
}

// T tokens over elements [k0, k1) of a panel whose element k0 is at p: acc[t] += the products.
template <class E, int T>
void panel_range(const uint8_t* p, int64_t k0, int64_t k1, const typename E::act* const a[T], sums8 acc[T]) {
  constexpr size_t step = panel_elem(E::bytes);
  for (int64_t k = k0; k < k1; ++k, p += step) {
    const auto w = E::load(p);
    for (int t = 0; t < T; ++t) acc[t] = E::madd(w, a[t] + k, acc[t]);
  }
}

template <class E, int T>
void store_tokens(const sums8 total[T], float* y, size_t ys, int n_rows) {
  for (int t = 0; t < T; ++t) store_lanes(y + size_t(t) * ys, to_floats(total[t]), n_rows);
}

// T tokens (t0...) of a whole panel, the segments one after another.
template <class E, int T>
void panel_tokens(const uint8_t* panel, int64_t n, const act_rows& a, int64_t t0, float* y, size_t ys, int n_rows) {
  const typename E::act* rows[T];
  for (int t = 0; t < T; ++t) rows[t] = act_row<E>(a, t0 + t);
  sums8 total[T];
  for (int t = 0; t < T; ++t) total[t] = zero8();
  for (int s = 0; s < float_dot_segments; ++s) {
    const int64_t k0 = float_dot_segment(n, s), k1 = float_dot_segment(n, s + 1);
    sums8 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = zero8();
    panel_range<E, T>(panel + size_t(k0) * panel_elem(E::bytes), k0, k1, rows, acc);
    for (int t = 0; t < T; ++t) total[t] = add8(total[t], acc[t]);
  }
  store_tokens<E, T>(total, y, ys, n_rows);
}

// Tokens per tile: the accumulators (two registers per token with AVX2) and the weight vectors fit
// AVX2's 16 registers, F32's products needing two more; AVX-512 has 32 registers of 8 doubles.
#if defined(__AVX512F__)
template <class E>
constexpr int tile_tokens = 8;
#else
template <class E>
constexpr int tile_tokens = E::bytes == 2 ? 6 : 5;
#endif

template <class E>
void gemm(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, const act_rows& a, int64_t t0,
          int64_t n_tok, float* y, size_t ys, int last_rows) {
  for (int64_t p = 0; p < n_panels; ++p) {
    const uint8_t* panel = panels + size_t(p) * panel_bytes;
    const int rows = p + 1 == n_panels ? last_rows : 8;
    float* yp = y + 8 * p;
    if (n_tok <= gemv_max_tokens) {
      for (int64_t t = 0; t < n_tok; ++t)
        store_lanes(yp + size_t(t) * ys, to_floats(panel_one_token<E>(panel, nb, act_row<E>(a, t0 + t))), rows);
      continue;
    }
    token_tiles<tile_tokens<E>>(n_tok, [&](auto tile, int64_t t) {
      panel_tokens<E, decltype(tile)::value>(panel, nb, a, t0 + t, yp + size_t(t) * ys, ys, rows);
    });
  }
}

// Unprepared weights, 1-3 tokens: each 8-row group packed a chunk at a time into a small buffer on
// the stack, the segments one after another (as panel_tokens; the chunks keep each chain's order).
template <class E, int T>
void gemv_group(const weight_view& w, int64_t g, int n_rows, const act_rows& a, int64_t t0, float* y, size_t ys) {
  constexpr int64_t chunk = 256;
  alignas(64) uint8_t buf[chunk * panel_elem(E::bytes)];
  const typename E::act* rows[T];
  for (int t = 0; t < T; ++t) rows[t] = act_row<E>(a, t0 + t);
  sums8 total[T];
  for (int t = 0; t < T; ++t) total[t] = zero8();
  for (int s = 0; s < float_dot_segments; ++s) {
    sums8 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = zero8();
    for (int64_t k0 = float_dot_segment(w.n_in, s), end = float_dot_segment(w.n_in, s + 1); k0 < end; k0 += chunk) {
      const int64_t k1 = std::min(end, k0 + chunk);
      pack_range<E::bytes>(w, g, n_rows, k0, k1, buf);
      panel_range<E, T>(buf, k0, k1, rows, acc);
    }
    for (int t = 0; t < T; ++t) total[t] = add8(total[t], acc[t]);
  }
  store_tokens<E, T>(total, y, ys, n_rows);
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
// against, and the kernel table's vec_dot): the four segments in the four lanes of a double vector
// while all have elements left, then the longer ones' last element in scalar code.
template <class E, class Rows>
float dot_row(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const uint8_t*>(wv);
  const auto* a = static_cast<const uint8_t*>(av);
  static_assert(float_dot_segments == 4, "one lane per segment");
  int64_t begin[4], len[4];
  int64_t common = n;
  for (int s = 0; s < 4; ++s) {
    begin[s] = float_dot_segment(n, s);
    len[s] = float_dot_segment(n, s + 1) - begin[s];
    common = std::min(common, len[s]);
  }
  auto product = [&](int64_t k) { return Rows::one(w + E::bytes * k) * Rows::one(a + E::bytes * k); };
  __m256d acc = _mm256_setzero_pd();
  for (int64_t i = 0; i < common; ++i) {
    const __m128 p =
        _mm_setr_ps(product(begin[0] + i), product(begin[1] + i), product(begin[2] + i), product(begin[3] + i));
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(p));
  }
  alignas(32) double lane[4];
  _mm256_store_pd(lane, acc);
  double total = 0;
  for (int s = 0; s < 4; ++s) {
    for (int64_t i = common; i < len[s]; ++i) lane[s] += double(product(begin[s] + i));
    total += lane[s];
  }
  return float(total);
}
struct f32_one {
  static float one(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
};

// An F16 or BF16 activation row as doubles (exact).
template <class Rows>
void widen(const uint8_t* row, int64_t n, double* out) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256 f = Rows::rows(row + 2 * k);
    _mm256_storeu_pd(out + k, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    _mm256_storeu_pd(out + k + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
  }
  for (; k < n; ++k) out[k] = double(Rows::one(row + 2 * k));
}

template <class E, class Rows>
constexpr mm_kernel float_kernel() {
  mm_kernel k{E::type, 1, E::bytes, E::type, E::bytes, false, panel_elem(E::bytes), pack<E>, gemm<E>, gemv<E>,
              nullptr, dot_row<E, Rows>};
  if constexpr (std::is_same_v<typename E::act, double>) k.widen = widen<Rows>;
  return k;
}

constexpr mm_kernel float_kernels[] = {
    float_kernel<f16_elems, f16_rows>(),
    float_kernel<bf16_elems, bf16_rows>(),
    float_kernel<f32_elems, f32_one>(),
};

}  // namespace
}  // namespace glia::cpu
