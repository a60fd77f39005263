// Matmul kernels for the k-quants of fewer bits and IQ4_XS (Q3_K, Q2_K, IQ4_XS; Q8_K activations),
// and the table of all k-quant kernels; the shared helpers, Q4_K, Q5_K and Q6_K are in
// mm_kquants_kernels.h, whose conventions (panels, bit-exact float steps) hold here too.
// Included by one .cpp per instruction set, like it.
#pragma once

#include "backend/cpu/mm_kquants_kernels.h"

namespace glia::cpu {
namespace {
// ---- Q3_K ---------------------------------------------------------------------------------------
// 16 groups of 16 with signed 6-bit scales s_g (stored + 32) and codes u = q2 | hbit << 2 in 0..7
// (value u - 4): element 128h + 32s + l has q2 in bits 2s..2s+1 of qs[32h + l] and hbit in bit
// 4h + s of hmask[l]. As Q6_K, the codes enter the byte dot products unsigned and the offset leaves
// through the activation's group sums: isum = sum_g s_g * sum_{16 in g} u a - 4 * sum_g s_g bsum_g.
// Products pair up to 2 * 7 * 128 = 1792, so a group's 4 chunks add in int16 (7168).

// Per-byte int8 subtraction, for the scale decoding below (every lane-wise family).
inline __m256i vsub8(__m256i a, __m256i b) { return _mm256_sub_epi8(a, b); }
inline two_i vsub8(two_i a, two_i b) { return {vsub8(a.lo, b.lo), vsub8(a.hi, b.hi)}; }
#ifdef GLIA_PANEL_PAIRS
inline __m512i vsub8(__m512i a, __m512i b) { return _mm512_sub_epi8(a, b); }
#endif

// The 16 group scales of a Q3_K block (q3_k_scale - 32) as int8, group g in byte g, with 32-bit
// word operations on the 12 packed bytes: the low nibbles of groups 0-7 (8-15) are the low (high)
// nibbles of bytes 0-7; the top two bits of group g are bits 2(g/4)..+1 of byte 8 + g % 4.
__m128i q3_k_scale_bytes(const uint8_t* s) {
  uint32_t u[3];
  std::memcpy(u, s, 12);
  const uint32_t lo4 = 0x0F0F0F0F, lo2 = 0x03030303;
  const __m128i x = _mm_setr_epi32(int32_t((u[0] & lo4) | (u[2] & lo2) << 4), int32_t((u[1] & lo4) | (u[2] >> 2 & lo2) << 4),
                                   int32_t((u[0] >> 4 & lo4) | (u[2] >> 4 & lo2) << 4),
                                   int32_t((u[1] >> 4 & lo4) | (u[2] >> 6 & lo2) << 4));
  return _mm_sub_epi8(x, _mm_set1_epi8(32));
}

// Bit k of every byte of hmask moved to bit 2 (the rest zero): the high code bit of slice k.
// Bits carried across a byte border by the 16-bit shifts land below bit 2 (left shifts by at most
// 2) or above it (right shifts), and the mask drops them.
__m256i q3_k_high_bits(__m256i hm, int k) {
  const __m256i at2 = k < 2 ? _mm256_slli_epi16(hm, 2 - k) : k == 2 ? hm : _mm256_srli_epi16(hm, k - 2);
  return _mm256_and_si256(at2, _mm256_set1_epi8(0x04));
}

// Codes (0..7) of one Q3_K block in element order: vector k holds slice k's 32 codes.
void q3_k_codes(const block_q3_k& b, __m256i q[8]) {
  const __m256i low2 = _mm256_set1_epi8(0x03);
  const __m256i hm = load256(b.hmask);
  for (int h = 0; h < 2; ++h) {
    const __m256i qs = load256(b.qs + 32 * h);
    for (int s = 0; s < 4; ++s)
      q[4 * h + s] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), low2),
                                     q3_k_high_bits(hm, 4 * h + s));
  }
}

// Scale of group 2k in int16 lanes 0-7, of group 2k + 1 in lanes 8-15 (the pair sums of slice k).
inline __m256i q3_k_slice_scales(__m128i sc8, int k) {
  return _mm256_cvtepi8_epi16(
      _mm_shuffle_epi8(sc8, _mm_set_epi64x(0x0101010101010101LL * (2 * k + 1), 0x0101010101010101LL * (2 * k))));
}

// The int32 lanes of one block's isum (codes, scales and offset as above) for activation block a.
inline __m256i q3_k_block_sum(const __m256i q[8], __m128i sc8, const block_q8_k& a) {
  const __m256i offset = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), load256(a.bsums));
  __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 2));
  for (int k = 0; k < 8; ++k) {
    const __m256i p = _mm256_maddubs_epi16(q[k], load256(a.qs + 32 * k));
    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, q3_k_slice_scales(sc8, k)));
  }
  return sumi;
}

float dot_q3_k(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q3_k*>(wv);
  const auto* a = static_cast<const block_q8_k*>(av);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    __m256i q[8];
    q3_k_codes(w[b], q);
    const __m256i sumi = q3_k_block_sum(q, q3_k_scale_bytes(w[b].scales), a[b]);
    sum += rounded(half_to_float(w[b].d) * a[b].d * float(hsum_i32(sumi)));
  }
  return sum;
}

// Q3_K panel of one super-block of 8 rows (880 bytes), the codes rearranged at load: per row 96
// bytes as 24 cells at [0, 768), cell 8v + i holding elements 4i..4i+3 of slices 2v (bits 0-2) and
// 2v + 1 (bits 3-5) as 3-bit codes, with the codes of slices 6 and 7 spread over bits 6-7 (see
// q3_k_panel_codes); then the 12 packed scale bytes as 3 words [word][row] at [768, 864) and d of
// the 8 rows as fp16. Six of eight slices need one mask or a shift and a mask, the other two five
// operations: 19 operations and 3 loads per 8 slices of a cell, where the file's layout (2-bit
// cells, high-bit cells) took 39 and 16. Measured on Zen 5 (in cache, one token in two streams,
// B/cycle; Q3_K_M decode, 2 threads, medians of three alternated runs): AVX2 5.1 -> 6.8, 57.3 ->
// 71.7 t/s; AVX-512 VNNI 10.5 -> 11.8, 78.1 -> 86.6 t/s.
constexpr size_t q3_k_packed = 880;
constexpr size_t q3_k_scales_at = 768, q3_k_d_at = 864;

// The 96 code-layout bytes of one row's block, [32v + l] for element l of the slices of vector v:
//   v = 0: c0 | c1 << 3 | (c6 & 3) << 6
//   v = 1: c2 | c3 << 3 | (c6 >> 2) << 6 | (c7 & 1) << 7
//   v = 2: c4 | c5 << 3 | (c7 >> 1) << 6
// (c_k: the element's code in slice k, 0..7; the 16-bit shifts' stray bits are masked off).
void q3_k_panel_codes(const block_q3_k& b, uint8_t out[96]) {
  __m256i q[8];
  q3_k_codes(b, q);
  const __m256i low1 = _mm256_set1_epi8(1), low2 = _mm256_set1_epi8(3);
  const __m256i c6lo = _mm256_slli_epi16(_mm256_and_si256(q[6], low2), 6);
  const __m256i c6hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q[6], 2), low1), 6);
  const __m256i c7lo = _mm256_slli_epi16(_mm256_and_si256(q[7], low1), 7);
  const __m256i c7hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q[7], 1), low2), 6);
  store256(out, _mm256_or_si256(_mm256_or_si256(q[0], _mm256_slli_epi16(q[1], 3)), c6lo));
  store256(out + 32, _mm256_or_si256(_mm256_or_si256(q[2], _mm256_slli_epi16(q[3], 3)), _mm256_or_si256(c6hi, c7lo)));
  store256(out + 64, _mm256_or_si256(_mm256_or_si256(q[4], _mm256_slli_epi16(q[5], 3)), c7hi));
}

void pack_q3_k(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_q3_k), q3_k_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    store_code_cells<96, block_q3_k>(blk, q3_k_panel_codes, dst);
    store_block_words(blk, offsetof(block_q3_k, scales), 3, dst + q3_k_scales_at);
    store_block_halves(blk, offsetof(block_q3_k, d), dst + q3_k_d_at);
  });
}

// Codes (0..7) of elements 4i..4i+3 of slice k, 8 rows (see pack_q3_k).
template <class V>
[[gnu::always_inline]] inline typename V::i q3_k_panel_code(const uint8_t* panel, size_t second, int k, int i) {
  using I = typename V::i;
  const uint8_t* cells = panel + 32 * i;
  if (k < 6) {
    const I v = V::load(cells + 256 * (k / 2), second);
    return vand(k % 2 ? vsrl16(v, 3) : v, V::set1_i8(0x07));
  }
  // Masking before the 16-bit shifts keeps the neighbouring byte's bits out.
  if (k == 6)
    return vor(vsrl16(vand(V::load(cells, second), V::set1_i8(int8_t(0xC0))), 6),
               vsrl16(vand(V::load(cells + 256, second), V::set1_i8(0x40)), 4));
  return vor(vsrl16(vand(V::load(cells + 256, second), V::set1_i8(int8_t(0x80))), 7),
             vsrl16(vand(V::load(cells + 512, second), V::set1_i8(int8_t(0xC0))), 5));
}

// Signed scales of groups 4m..4m+3 of the 8 rows, group 4m + j in byte j of each lane (as
// q3_k_scale_bytes, on the panel's scale words).
template <class V>
typename V::i q3_k_scale_word(const uint8_t* words, size_t second, int m) {
  using I = typename V::i;
  const I lo = V::load(words + 32 * (m % 2), second);
  const I nib = vand(m < 2 ? lo : vsrl32(lo, 4), V::set1_i8(0x0F));
  const I w2 = V::load(words + 64, second);
  // Bits 2m..2m+1 of byte 8 + j to bits 4-5; the mask drops what the word shifts carry over.
  const I top = m < 2 ? vsll32(w2, 4 - 2 * m) : m == 2 ? w2 : vsrl32(w2, 2);
  return vsub8(vor(nib, vand(top, V::set1_i8(0x30))), V::set1_i8(32));
}

template <int T, class V>
struct gemm_q3_k_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n) {
    using I = typename V::i;
    using F = typename V::f;
    const uint8_t* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = a.data + size_t(t0 + t) * a.stride;
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q3_k_packed) {
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const uint8_t* words = panel + q3_k_scales_at;
      I sc[4];
      for (int m = 0; m < 4; ++m) sc[m] = q3_k_scale_word<V>(words, second, m);
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
  #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        if constexpr (T <= gemv_max_tokens) if (k % 2 == 0) decode_prefetch<V, q3_k_packed, 4>(panel, second, k / 2);
  #pragma GCC unroll 2
        for (int q = 0; q < 2; ++q) {
          const int g = 2 * k + q;
          const I scale = lane_scales(sc[g / 4], g % 4, true);
          I acc_g[T];
          for (int t = 0; t < T; ++t) acc_g[t] = V::zero();
  #pragma GCC unroll 4
          for (int i = 4 * q; i < 4 * q + 4; ++i) {
            const I code = q3_k_panel_code<V>(panel, second, k, i);
            for (int t = 0; t < T; ++t) acc_g[t] = tile_dot<T, V>(acc_g[t], code, arow[t] + ab + q8_k_qs + 32 * k + 4 * i);
          }
          for (int t = 0; t < T; ++t) sumi[t] = chained(vadd32(sumi[t], byte_dot_scaled(acc_g[t], scale)));
        }
      }
      fold_offset_block<T, V, 2>([&](int m) { return sc[m]; }, panel + q3_k_d_at, second, arow, ab, sumi, acc);
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n);
  }
};

// T tokens (1-3), 8 rows at a time from the file layout (as gemv_q6_k_tokens): a row's codes and
// scales are assembled once for all T tokens, the 8 rows' sums reduced together, the float chain
// run with the rows in the lanes.
template <int T>
struct gemv_q3_k_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    const block_q8_k* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = reinterpret_cast<const block_q8_k*>(a.data + size_t(t0 + t) * a.stride);
    const int64_t nb = w.n_in / 256;
    gemv_groups<T>(w, r0, r1, nb, y, ys, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
      const size_t wb = size_t(b) * sizeof(block_q3_k);
      __m256i part[T][8];
      for (int r = 0; r < 8; ++r) {
        const auto& blk = *reinterpret_cast<const block_q3_k*>(rows[r] + wb);
        __m256i q[8];
        q3_k_codes(blk, q);
        const __m128i sc8 = q3_k_scale_bytes(blk.scales);
        for (int t = 0; t < T; ++t) part[t][r] = q3_k_block_sum(q, sc8, arow[t][b]);
      }
      const __m256 dw = gather_halves(rows, wb + offsetof(block_q3_k, d));
      for (int t = 0; t < T; ++t) {
        const __m256i isum = hsum_8x_i32(part[t]);
        const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(arow[t][b].d));
        acc[t] = _mm256_add_ps(acc[t], rounded(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum))));
      }
    });
  }
};

// ---- Q2_K ---------------------------------------------------------------------------------------
// 16 groups of 16 with 4-bit scales and mins (scales[g]: the scale in the low nibble, the min in
// the high one) and codes u in 0..3 placed as Q3_K's low bits (bits 2s..2s+1 of qs[32h + l] for
// element 128h + 32s + l): isum = sum_g sc_g * sum_{16 in g} u a, min_term = sum_g m_g * bsum_g.
// Products pair up to 2 * 3 * 128 = 768, so a group's four chunks add in int16 (3072) on AVX2.

// Codes (0..3) of one Q2_K block in element order: vector k holds slice k's 32 codes.
void q2_k_codes(const block_q2_k& b, __m256i q[8]) {
  const __m256i low2 = _mm256_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m256i qs = load256(b.qs + 32 * h);
    for (int s = 0; s < 4; ++s) q[4 * h + s] = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), low2);
  }
}

// One block's integer sums for activation block a, as 4 + 4 int32 partials: isum in the low 128
// bits, min_term in the high 128 bits (summed by the caller).
inline __m256i q2_k_block_parts(const __m256i q[8], __m128i sc8, const block_q8_k& a) {
  const __m128i scales = _mm_and_si128(sc8, _mm_set1_epi8(0x0F));
  const __m128i mins = _mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0x0F));
  __m256i sumi = _mm256_setzero_si256();
  for (int k = 0; k < 8; ++k) {
    const __m256i p = _mm256_maddubs_epi16(q[k], load256(a.qs + 32 * k));
    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, q3_k_slice_scales(scales, k)));
  }
  const __m256i m = _mm256_madd_epi16(_mm256_cvtepu8_epi16(mins), load256(a.bsums));
  const __m128i isum4 = _mm_add_epi32(_mm256_castsi256_si128(sumi), _mm256_extracti128_si256(sumi, 1));
  const __m128i min4 = _mm_add_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(isum4), min4, 1);
}

float dot_q2_k(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q2_k*>(wv);
  const auto* a = static_cast<const block_q8_k*>(av);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    __m256i q[8];
    q2_k_codes(w[b], q);
    const __m256i parts = q2_k_block_parts(q, load128(w[b].scales), a[b]);
    const __m128i both = _mm_hadd_epi32(_mm_hadd_epi32(_mm256_castsi256_si128(parts), _mm256_extracti128_si256(parts, 1)),
                                        _mm_setzero_si128());
    const int isum = _mm_cvtsi128_si32(both), min_term = _mm_extract_epi32(both, 1);
    const float dall = a[b].d * half_to_float(w[b].d);
    const float dmin = a[b].d * half_to_float(w[b].dmin);
    sum += rounded(dall * float(isum)) - rounded(dmin * float(min_term));
  }
  return sum;
}

// Compact Q2_K panel of one super-block of 8 rows, exactly the bytes of the 8 file blocks (672):
//   [0, 512)    the 64 qs bytes of each row as 16 cells (as Q3_K's)
//   [512, 640)  the 16 scale/min bytes as 4 words [word][row]: byte j of word m is group 4m + j
//   [640, 672)  d of the 8 rows, then dmin, as fp16
constexpr size_t q2_k_packed = 672;
constexpr size_t q2_k_scales_at = 512, q2_k_d_at = 640, q2_k_dmin_at = 656;

void pack_q2_k(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_q2_k), q2_k_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    store_block_cells(blk, offsetof(block_q2_k, qs), 2, dst);
    store_block_words(blk, offsetof(block_q2_k, scales), 4, dst + q2_k_scales_at);
    store_block_halves(blk, offsetof(block_q2_k, d), dst + q2_k_d_at);
    store_block_halves(blk, offsetof(block_q2_k, dmin), dst + q2_k_dmin_at);
  });
}

template <int T, class V>
struct gemm_q2_k_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n) {
    using I = typename V::i;
    using F = typename V::f;
    const uint8_t* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = a.data + size_t(t0 + t) * a.stride;
    const I low2 = V::set1_i8(0x03), low4 = V::set1_i8(0x0F);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q2_k_packed) {
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const uint8_t* words = panel + q2_k_scales_at;
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
  #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        if constexpr (T <= gemv_max_tokens) if (k % 2 == 0) decode_prefetch<V, q2_k_packed, 4>(panel, second, k / 2);
        const int h = k / 4, s = k % 4;
  #pragma GCC unroll 2
        for (int q = 0; q < 2; ++q) {
          const int g = 2 * k + q;
          const I scale = lane_scales(vand(V::load(words + 32 * (g / 4), second), low4), g % 4, false);
          I acc_g[T];
          for (int t = 0; t < T; ++t) acc_g[t] = V::zero();
  #pragma GCC unroll 4
          for (int i = 4 * q; i < 4 * q + 4; ++i) {
            const I v = V::load(panel + 32 * (8 * h + i), second);
            const I code = vand(s ? vsrl16(v, 2 * s) : v, low2);
            for (int t = 0; t < T; ++t) acc_g[t] = tile_dot<T, V>(acc_g[t], code, arow[t] + ab + q8_k_qs + 32 * k + 4 * i);
          }
          for (int t = 0; t < T; ++t) sumi[t] = chained(vadd32(sumi[t], byte_dot_scaled(acc_g[t], scale)));
        }
      }
      // min_term: (m_2i, m_2i+1) int16 pairs against the activation's group sums 2i, 2i + 1.
      I min_term[T];
      for (int t = 0; t < T; ++t) min_term[t] = V::zero();
      for (int i = 0; i < 8; ++i) {
        const I mins = vand(vsrl32(V::load(words + 32 * (i / 2), second), 4), low4);
        const I pairs = lane_byte_pairs(mins, 2 * (i % 2), true, false);
        for (int t = 0; t < T; ++t)
          min_term[t] = vadd32(min_term[t], vmadd16(pairs, V::bcast4(arow[t] + ab + q8_k_bsums + 4 * i)));
      }
      const F dw = V::halves(panel + q2_k_d_at, second);
      const F dminw = V::halves(panel + q2_k_dmin_at, second);
      for (int t = 0; t < T; ++t) {
        float da;
        std::memcpy(&da, arow[t] + ab, 4);
        const F vda = V::set1_f(da);
        const F p = vsub(rounded(vmul(vmul(vda, dw), vcvt(sumi[t]))), rounded(vmul(vmul(vda, dminw), vcvt(min_term[t]))));
        acc[t] = vadd(acc[t], p);
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n);
  }
};

// T tokens (1-3), 8 rows at a time from the file layout (as gemv_q4_k_tokens): a row's codes are
// unpacked once for all T tokens, the 8 rows' isum and min_term reduced together by one hadd tree.
template <int T>
struct gemv_q2_k_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    const block_q8_k* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = reinterpret_cast<const block_q8_k*>(a.data + size_t(t0 + t) * a.stride);
    const int64_t nb = w.n_in / 256;
    gemv_groups<T>(w, r0, r1, nb, y, ys, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
      const size_t wb = size_t(b) * sizeof(block_q2_k);
      __m256i part[T][8];
      for (int r = 0; r < 8; ++r) {
        const auto& blk = *reinterpret_cast<const block_q2_k*>(rows[r] + wb);
        __m256i q[8];
        q2_k_codes(blk, q);
        const __m128i sc8 = load128(blk.scales);
        for (int t = 0; t < T; ++t) part[t][r] = q2_k_block_parts(q, sc8, arow[t][b]);
      }
      const __m256 dw = gather_halves(rows, wb + offsetof(block_q2_k, d));
      const __m256 dminw = gather_halves(rows, wb + offsetof(block_q2_k, dmin));
      for (int t = 0; t < T; ++t) {
        // hadd works within 128-bit halves: after two levels the low half holds isum of rows 0-3
        // (4-7) and the high half their min_terms.
        const __m256i* pt = part[t];
        const __m256i h01 = _mm256_hadd_epi32(pt[0], pt[1]), h23 = _mm256_hadd_epi32(pt[2], pt[3]);
        const __m256i h45 = _mm256_hadd_epi32(pt[4], pt[5]), h67 = _mm256_hadd_epi32(pt[6], pt[7]);
        const __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
        const __m256i isum = _mm256_permute2x128_si256(h0123, h4567, 0x20);
        const __m256i min_term = _mm256_permute2x128_si256(h0123, h4567, 0x31);
        const __m256 vda = _mm256_set1_ps(arow[t][b].d);
        const __m256 dall = _mm256_mul_ps(vda, dw);
        const __m256 dmin = _mm256_mul_ps(vda, dminw);
        acc[t] = _mm256_add_ps(acc[t], _mm256_sub_ps(rounded(_mm256_mul_ps(dall, _mm256_cvtepi32_ps(isum))),
                                                     rounded(_mm256_mul_ps(dmin, _mm256_cvtepi32_ps(min_term)))));
      }
    });
  }
};

// ---- IQ4_XS -------------------------------------------------------------------------------------
// 8 sub-blocks of 32 with 6-bit scales ls_g (stored + 32) and 4-bit indices into the signed table
// kvalues_iq4nl (-127..113); sub-block g's 16 qs bytes hold elements 32g + j (low nibbles) and
// 32g + 16 + j (high). The reference rounds per sub-block:
//   sum += ((dw * da) * float(ls_g - 32)) * float(sumi_g), sumi_g = sum_{32 in g} kv a.
// The byte dot products need unsigned weights: with VNNI a value enters as u = kv + 128 (1..241,
// one table lookup) and the offset leaves through the activation's group sums: sumi_g = sum u a -
// 128 (bsum_2g + bsum_2g+1). maddubs pairs of u would reach 2 * 241 * 127 and saturate, so AVX2
// multiplies |kv| by a with kv's sign (pairs within 2 * 127 * 127, Q8_K quants being within +-127),
// widened to int32 at once, as IQ4_NL's kernels do.
template <bool Biased>  // kv + 128, or kv
constexpr int8_t iq4_entry(int n) {
  return int8_t(Biased ? quant::kvalues_iq4nl[n] + 128 : quant::kvalues_iq4nl[n]);
}
template <bool Biased>
__m256i iq4_table() {
  constexpr auto e = iq4_entry<Biased>;
  return _mm256_setr_epi8(e(0), e(1), e(2), e(3), e(4), e(5), e(6), e(7), e(8), e(9), e(10), e(11), e(12), e(13), e(14), e(15),
                          e(0), e(1), e(2), e(3), e(4), e(5), e(6), e(7), e(8), e(9), e(10), e(11), e(12), e(13), e(14), e(15));
}

// Table lookup per byte (indices 0..15) in every lane-wise family, and a table in each family.
inline __m256i vlookup(__m256i table, __m256i idx) { return _mm256_shuffle_epi8(table, idx); }
inline two_i vlookup(two_i table, two_i idx) { return {vlookup(table.lo, idx.lo), vlookup(table.hi, idx.hi)}; }
template <class V, bool Biased>
typename V::i iq4_table_of() {
  if constexpr (std::is_same_v<family_t<V>, rows8>) return iq4_table<Biased>();
  else if constexpr (std::is_same_v<family_t<V>, rows8x2>) return both(iq4_table<Biased>());
#ifdef GLIA_PANEL_PAIRS
  else return _mm512_broadcast_i64x4(iq4_table<Biased>());
#endif
}
#ifdef GLIA_PANEL_PAIRS
inline __m512i vlookup(__m512i table, __m512i idx) { return _mm512_shuffle_epi8(table, idx); }
#endif

// The 8 rows' fp16 scales_h at p (panel layout, [row]) as int32 lanes.
template <class V>
typename V::i iq4_xs_high_scales(const uint8_t* p, size_t second) {
  if constexpr (std::is_same_v<family_t<V>, rows8>) return _mm256_cvtepu16_epi32(load128(p));
  else if constexpr (std::is_same_v<family_t<V>, rows8x2>) return make_two(_mm256_cvtepu16_epi32(load128(p)), _mm256_cvtepu16_epi32(load128(p + second)));
#ifdef GLIA_PANEL_PAIRS
  else return _mm512_cvtepu16_epi32(_mm256_inserti128_si256(_mm256_castsi128_si256(load128(p)), load128(p + second), 1));
#endif
}

float dot_iq4_xs(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_iq4_xs*>(wv);
  const auto* a = static_cast<const block_q8_k*>(av);
  const __m256i table = iq4_table<false>();
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const float d4d8 = half_to_float(w[b].d) * a[b].d;
    for (int g = 0; g < 8; ++g) {
      const __m256i kv = vlookup(table, unpack_nibbles(w[b].qs + 16 * g));
      const __m256i act = load256(a[b].qs + 32 * g);
      const int sumi = hsum_i32(byte_dot_add32(_mm256_setzero_si256(), abs_u8(kv), sign_of(act, kv)));
      sum += rounded(d4d8 * float(quant::iq4_xs_scale(w[b], g) - 32) * float(sumi));
    }
  }
  return sum;
}

// Compact IQ4_XS panel of one super-block of 8 rows, exactly the bytes of the 8 file blocks (1088):
//   [0, 1024)     the 128 qs bytes of each row as 32 cells: cell 4g + i holds elements
//                 32g + 4i..4i+3 in its low nibbles and 32g + 16 + 4i..4i+3 in its high ones
//   [1024, 1056)  scales_l as one word [row]: bits 4g..4g+3 are the low bits of ls_g
//   [1056, 1072)  scales_h [row] (16 bits: bits 2g..2g+1 are the top bits of ls_g)
//   [1072, 1088)  d [row] as fp16
constexpr size_t iq4_xs_packed = 1088;
constexpr size_t iq4_xs_scales_l_at = 1024, iq4_xs_scales_h_at = 1056, iq4_xs_d_at = 1072;

void pack_iq4_xs(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_iq4_xs), iq4_xs_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    store_block_cells(blk, offsetof(block_iq4_xs, qs), 4, dst);
    store_block_words(blk, offsetof(block_iq4_xs, scales_l), 1, dst + iq4_xs_scales_l_at);
    store_block_halves(blk, offsetof(block_iq4_xs, scales_h), dst + iq4_xs_scales_h_at);
    store_block_halves(blk, offsetof(block_iq4_xs, d), dst + iq4_xs_d_at);
  });
}

template <int T, class V>
struct gemm_iq4_xs_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n) {
    using I = typename V::i;
    using F = typename V::f;
    const uint8_t* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = a.data + size_t(t0 + t) * a.stride;
    const I low4 = V::set1_i8(0x0F);
    const I table = iq4_table_of<V, byte_dot_vnni>();  // kv + 128 with VNNI, kv without
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += iq4_xs_packed) {
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const I sl = V::load(panel + iq4_xs_scales_l_at, second);
      const I sh = iq4_xs_high_scales<V>(panel + iq4_xs_scales_h_at, second);
      const F dw = V::halves(panel + iq4_xs_d_at, second);
      F d4d8[T];
      for (int t = 0; t < T; ++t) {
        float da;
        std::memcpy(&da, arow[t] + ab, 4);
        d4d8[t] = vmul(dw, V::set1_f(da));
      }
  #pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        if constexpr (T <= gemv_max_tokens) if (g % 2 == 0) decode_prefetch<V, iq4_xs_packed, 4>(panel, second, g / 2);
        I sumi[T];
        for (int t = 0; t < T; ++t) sumi[t] = V::zero();
  #pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) {
          const int i = c % 4, half = c / 4;
          const I v = V::load(panel + 32 * (4 * g + i), second);
          const I kv = vlookup(table, vand(half ? vsrl16(v, 4) : v, low4));
          const size_t at = ab + q8_k_qs + 32 * g + 16 * half + 4 * i;
          if constexpr (byte_dot_vnni) {
            for (int t = 0; t < T; ++t) sumi[t] = tile_dot<T, V>(sumi[t], kv, arow[t] + at);
          } else {
            const I kv_abs = abs_u8(kv);
            for (int t = 0; t < T; ++t) sumi[t] = chained(byte_dot_add32(sumi[t], kv_abs, sign_of(V::bcast4(arow[t] + at), kv)));
          }
        }
        // ls_g - 32 per row: low nibble from bits 4g.. of scales_l, top bits from bits 2g.. of scales_h.
        const I ls = vor(vand(vsrl32(sl, 4 * g), V::set1_i32(0x0F)), vsll32(vand(vsrl32(sh, 2 * g), V::set1_i32(3)), 4));
        const F fls = vcvt(vsub32(ls, V::set1_i32(32)));
        for (int t = 0; t < T; ++t) {
          I isum = sumi[t];
          if constexpr (byte_dot_vnni) {
            int16_t bs[2];
            std::memcpy(bs, arow[t] + ab + q8_k_bsums + 4 * g, 4);
            isum = vsub32(isum, V::set1_i32(128 * (bs[0] + bs[1])));
          }
          acc[t] = vadd(acc[t], rounded(vmul(vmul(d4d8[t], fls), vcvt(isum))));
        }
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n);
  }
};

// T tokens (1-3), 8 rows at a time from the file layout (weights that were not prepared): per
// sub-block g a row's values are looked up once for all T tokens, the 8 rows' sums reduced together
// and the reference's per-sub-block float step run with the rows in the lanes.
template <int T>
struct gemv_iq4_xs_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    const block_q8_k* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = reinterpret_cast<const block_q8_k*>(a.data + size_t(t0 + t) * a.stride);
    const int64_t nb = w.n_in / 256;
    const __m256i table = iq4_table<false>();
    gemv_groups<T>(w, r0, r1, nb, y, ys, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
      const size_t wb = size_t(b) * sizeof(block_iq4_xs);
      const block_iq4_xs* blk[8];
      for (int r = 0; r < 8; ++r) blk[r] = reinterpret_cast<const block_iq4_xs*>(rows[r] + wb);
      const __m256 dw = gather_halves(rows, wb + offsetof(block_iq4_xs, d));
      __m256 d4d8[T];
      for (int t = 0; t < T; ++t) d4d8[t] = _mm256_mul_ps(dw, _mm256_set1_ps(arow[t][b].d));
      for (int g = 0; g < 8; ++g) {
        __m256i part[T][8];
        alignas(32) int32_t ls[8];
        for (int r = 0; r < 8; ++r) {
          const __m256i kv = vlookup(table, unpack_nibbles(blk[r]->qs + 16 * g));
          const __m256i kv_abs = abs_u8(kv);
          for (int t = 0; t < T; ++t)
            part[t][r] = byte_dot_add32(_mm256_setzero_si256(), kv_abs, sign_of(load256(arow[t][b].qs + 32 * g), kv));
          ls[r] = quant::iq4_xs_scale(*blk[r], g) - 32;
        }
        const __m256 fls = _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(ls)));
        for (int t = 0; t < T; ++t) {
          const __m256 isum = _mm256_cvtepi32_ps(hsum_8x_i32(part[t]));
          acc[t] = _mm256_add_ps(acc[t], rounded(_mm256_mul_ps(_mm256_mul_ps(d4d8[t], fls), isum)));
        }
      }
    });
  }
};

// Decode: how one-token matmuls read panels where the build has rows16, and prefetch (decode_form).
template <decode_form Decode>
constexpr mm_kernel kquant_kernels[] = {
    {dtype::q4_k, 256, sizeof(block_q4_k), dtype::q8_k, sizeof(block_q8_k), false, q4_k_packed, pack_q4_k,
     gemm_panels<gemm_q4_k_tile, Decode>, gemv_tokens<gemv_q4_k_tokens>, nullptr, dot_q4_k,
     gemv_panel_streams<gemm_q4_k_tile, Decode>},
    {dtype::q6_k, 256, sizeof(block_q6_k), dtype::q8_k, sizeof(block_q8_k), false, q6_k_packed, pack_q6_k,
     gemm_panels<gemm_q6_k_tile, Decode>, gemv_tokens<gemv_q6_k_tokens>, nullptr, dot_q6_k,
     gemv_panel_streams<gemm_q6_k_tile, Decode>},
    {dtype::q5_k, 256, sizeof(block_q5_k), dtype::q8_k, sizeof(block_q8_k), false, q5_k_packed, pack_q5_k,
     gemm_panels<gemm_q5_k_tile, Decode>, gemv_tokens<gemv_q5_k_tokens>, nullptr, dot_q5_k,
     gemv_panel_streams<gemm_q5_k_tile, Decode>},
    {dtype::q3_k, 256, sizeof(block_q3_k), dtype::q8_k, sizeof(block_q8_k), false, q3_k_packed, pack_q3_k,
     gemm_panels<gemm_q3_k_tile, Decode>, gemv_tokens<gemv_q3_k_tokens>, nullptr, dot_q3_k,
     gemv_panel_streams<gemm_q3_k_tile, Decode>},
    {dtype::q2_k, 256, sizeof(block_q2_k), dtype::q8_k, sizeof(block_q8_k), false, q2_k_packed, pack_q2_k,
     gemm_panels<gemm_q2_k_tile, Decode>, gemv_tokens<gemv_q2_k_tokens>, nullptr, dot_q2_k,
     gemv_panel_streams<gemm_q2_k_tile, Decode>},
    {dtype::iq4_xs, 256, sizeof(block_iq4_xs), dtype::q8_k, sizeof(block_q8_k), false, iq4_xs_packed, pack_iq4_xs,
     gemm_panels<gemm_iq4_xs_tile, Decode>, gemv_tokens<gemv_iq4_xs_tokens>, nullptr, dot_iq4_xs,
     gemv_panel_streams<gemm_iq4_xs_tile, Decode>},
};

}  // namespace
}  // namespace glia::cpu
