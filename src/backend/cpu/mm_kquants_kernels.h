// Matmul kernels for Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS weights (Q8_K activations), bit-exact
// twins of the type table's reference vec_dot (quant/k_quants_high.cpp, k_quants_low.cpp, iq4.cpp).
// Per super-block of 256 the integer sums are exact; per output the float chain is the reference's:
//   Q4_K, Q5_K: sum += (dw * da) * float(isum) - (dmin_w * da) * float(min_term)
//   Q2_K: the same with (da * dw) and (da * dmin_w) (products commute exactly)
//   Q3_K, Q6_K: sum += (dw * da) * float(isum)
//   IQ4_XS: per sub-block g of 32, sum += ((dw * da) * float(ls_g - 32)) * float(sumi_g)
// evaluated lane-wise with 8 weight rows in the lanes of a vector (no fused multiply-add).
//
// Integer parts (exact):
//   Q4_K: isum = sum_j scale_j * sum_{32 in j} q a (q 0..15), min_term = sum_j min_j * (bsums of j)
//   Q5_K: the same with q 0..31
//   Q6_K: isum = sum_g scale_g * sum_{16 in g} q a - 32 * sum_g scale_g * bsum_g (q 0..63)
//   Q3_K: isum = sum_g scale_g * sum_{16 in g} q a - 4 * sum_g scale_g * bsum_g (q 0..7)
//   Q2_K: isum = sum_g scale_g * sum_{16 in g} q a (q 0..3), min_term = sum_g min_g * bsum_g
// Nibble products pair up to 3810, so a Q4_K sub-block's 8 chunks add in int16; Q6_K products pair
// up to 2 * 63 * 127 = 16002, so only two chunks add in int16 before the scale madd; Q5_K products
// pair up to 2 * 31 * 128 = 7936, four chunks; Q3_K products up to 2 * 7 * 128 = 1792 (a group's
// four chunks), Q2_K's up to 768.
//
// Panel layouts of one super-block of 8 rows:
//  - Q4_K (compact, 1152 bytes: the file's bytes, see pack_q4_k): code bytes as 4-byte cells
//    [cell][row], the packed 6-bit scale words [word][row] (decoded lane-wise in the kernel), d and
//    dmin as fp16;
//  - Q5_K (compact, 1408 bytes: the file's bytes, see pack_q5_k): Q4_K's cells, scale words and
//    fp16 values, with the fifth code bits as 8 more cells;
//  - Q3_K (compact, 880 bytes: the file's bytes, see pack_q3_k): the 2-bit code cells, the high-bit
//    cells, the packed 6-bit scale words (decoded lane-wise in the kernel) and d;
//  - Q2_K (compact, 672 bytes: the file's bytes, see pack_q2_k): Q3_K's 2-bit code cells, the
//    4-bit scale/min bytes as words, d and dmin;
//  - IQ4_XS (compact, 1088 bytes: the file's bytes, see pack_iq4_xs): the index nibbles as cells,
//    scales_l as a word, scales_h and d as 16-bit values [row];
//  - Q6_K (1680 bytes, see pack_q6_k): the file's code bytes as cells, or (AVX2 builds) the 6-bit
//    codes rearranged at load so that three of four need one mask; the int8 scale words
//    [word][row], d as fp16.
// Included by one .cpp per instruction set (compiled with that ISA's flags): everything here has
// internal linkage, so each gets its own copy (see simd_avx2.h).
#pragma once

#include "backend/cpu/panel_vectors.h"

#include <algorithm>
#include <cstddef>

#include "backend/cpu/cpu_kernels.h"
#include "quant/block_types.h"

namespace glia::cpu {
namespace {

using quant::block_q2_k;
using quant::block_q3_k;
using quant::block_q4_k;
using quant::block_q5_k;
using quant::block_q6_k;
using quant::block_iq4_xs;
using quant::block_q8_k;

constexpr size_t q4_k_packed = 1152;  // compact: see pack_q4_k
constexpr size_t q6_k_packed = 1680;  // see pack_q6_k
constexpr size_t q8_k_qs = 4;       // offsetof(block_q8_k, qs)
constexpr size_t q8_k_bsums = 260;  // offsetof(block_q8_k, bsums)

// Codes of one Q6_K super-block as 8 vectors of 32 bytes 0..63 in element order (slice k holds
// elements 32k..32k+31): slice 4h+s takes its low nibble from ql[64h + 32(s%2) + l] (the low
// nibble for s < 2) and its top two bits from bits 2s..2s+1 of qh[32h + l].
void q6_k_codes(const block_q6_k& b, __m256i q[8]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m256i ql0 = load256(b.ql + 64 * h), ql1 = load256(b.ql + 64 * h + 32);
    const __m256i qh = load256(b.qh + 32 * h);
    // Bits moved across byte borders by the 16-bit shifts are masked off by low2 / low4.
    auto top = [&](int s) { return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * s), low2), 4); };
    q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), top(0));
    q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, low4), top(1));
    q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4), top(2));
    q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4), top(3));
  }
}

// ---- Q4_K ---------------------------------------------------------------------------------------

// The 8 scales (bytes 0-7) and 8 mins (bytes 8-15) of a Q4_K block (get_scale_min in the
// reference), with 32-bit word operations on the 12 packed bytes: entries 0-3 sit in the low 6
// bits of bytes 0-3 (scales) and 4-7 (mins); entries 4-7 keep their low 4 bits in bytes 8-11
// (scale low nibble, min high nibble) and their top 2 bits in the spare top bits of bytes 0-7.
__m128i q4_k_scales_mins_bytes(const uint8_t* s) {
  uint32_t u[3];
  std::memcpy(u, s, 12);
  const uint32_t sc_lo = u[0] & 0x3F3F3F3F, mn_lo = u[1] & 0x3F3F3F3F;
  const uint32_t sc_hi = (u[2] & 0x0F0F0F0F) | ((u[0] >> 6) & 0x03030303) << 4;
  const uint32_t mn_hi = ((u[2] >> 4) & 0x0F0F0F0F) | ((u[1] >> 6) & 0x03030303) << 4;
  return _mm_setr_epi32(int32_t(sc_lo), int32_t(sc_hi), int32_t(mn_lo), int32_t(mn_hi));
}

// Shuffle masks that spread int16 lane j of a 128-bit half over all 8 lanes of that half.
inline __m256i spread16(int j) { return _mm256_set1_epi16(int16_t((2 * j) | (2 * j + 1) << 8)); }

float dot_q4_k(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q4_k*>(wv);
  const auto* a = static_cast<const block_q8_k*>(av);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const __m128i sm = q4_k_scales_mins_bytes(w[b].scales);
    // min_term = sum_j min_j * (bsums 2j + 2j+1).
    const __m128i pairs = _mm_hadd_epi16(load128(a[b].bsums), load128(a[b].bsums + 8));
    const __m128i mt = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), pairs);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));  // int16 scale j in lane j
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 4; ++h) {
      const __m256i packed = load256(w[b].qs + 32 * h);
      const __m256i p_lo = _mm256_maddubs_epi16(_mm256_and_si256(packed, low4), load256(a[b].qs + 64 * h));
      const __m256i p_hi =
          _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(packed, 4), low4), load256(a[b].qs + 64 * h + 32));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, _mm256_shuffle_epi8(scales, spread16(2 * h))));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, _mm256_shuffle_epi8(scales, spread16(2 * h + 1))));
    }
    // Both integer sums with one reduction: lanes 0-3 isum partials, lanes 4-7 min partials.
    const __m128i isum4 = _mm_add_epi32(_mm256_castsi256_si128(sumi), _mm256_extracti128_si256(sumi, 1));
    const __m128i both = _mm_hadd_epi32(_mm_hadd_epi32(isum4, mt), _mm_setzero_si128());
    const int isum = _mm_cvtsi128_si32(both), min_term = _mm_extract_epi32(both, 1);
    const float d = half_to_float(w[b].d) * a[b].d;
    const float dmin = half_to_float(w[b].dmin) * a[b].d;
    sum += rounded(d * float(isum)) - rounded(dmin * float(min_term));
  }
  return sum;
}

// Compact Q4_K panel of one super-block of 8 rows, exactly the bytes of the 8 file blocks:
//   [0, 1024)     the 128 code bytes of each row as 32 cells of 4 bytes, [cell c][row r][4 bytes]:
//                 cell c = 8h + i holds, in its low nibbles, elements 4i..4i+3 of sub-block 2h and,
//                 in its high nibbles, the same of sub-block 2h + 1 (the file's nibble order)
//   [1024, 1120)  the 12 packed scale/min bytes of each row as 3 words, [word k][row r]
//   [1120, 1152)  d of the 8 rows, then dmin, as fp16
constexpr size_t q4_k_scales_at = 1024, q4_k_d_at = 1120, q4_k_dmin_at = 1136;

void pack_q4_k(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_q4_k), q4_k_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    store_block_cells(blk, offsetof(block_q4_k, qs), 4, dst);
    store_block_words(blk, offsetof(block_q4_k, scales), 3, dst + q4_k_scales_at);
    store_block_halves(blk, offsetof(block_q4_k, d), dst + q4_k_d_at);
    store_block_halves(blk, offsetof(block_q4_k, dmin), dst + q4_k_dmin_at);
  });
}

// Four 6-bit entries of the 8 rows' packed scale words (lane r = row r; get_scale_min of the
// reference with 32-bit word operations), byte i of each lane = entry 4 * (part / 2) + i of
// part 0: scales 0-3, 1: mins 0-3, 2: scales 4-7, 3: mins 4-7. Entries 0-3 are the low 6 bits of
// words 0 (scales) and 1 (mins); entries 4-7 keep their low 4 bits in word 2 (scale: low nibble,
// min: high nibble) and their top 2 bits in the spare top bits of words 0 / 1.
template <class V>
typename V::i q4_k_six_bits(const uint8_t* words, size_t second, int part) {
  using I = typename V::i;
  const I w = V::load(words + 32 * (part % 2), second);
  if (part < 2) return vand(w, V::set1_i8(0x3F));
  const I w2 = V::load(words + 64, second);
  const I low = vand(part == 2 ? w2 : vsrl32(w2, 4), V::set1_i8(0x0F));
  const I top = vand(vsrl32(w, 6), V::set1_i8(0x03));
  return vor(low, vsll32(top, 4));
}

template <int T, class V>
struct gemm_q4_k_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n) {
    using I = typename V::i;
    using F = typename V::f;
    const uint8_t* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = a.data + size_t(t0 + t) * a.stride;
    const I low4 = V::set1_i8(0x0F);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q4_k_packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<q4_k_packed>(panel, second);
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const uint8_t* words = panel + q4_k_scales_at;
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
      // Sub-block j = 2h + half: the low (half 0) or high (half 1) nibbles of cells 8h..8h+7.
  #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int h = j / 2, half = j % 2;
        // Few tokens: the even and the odd chunks in separate sums, so that each dependency chain of
        // byte dot products is half as long (as in the Q4_0 tile).
        constexpr int split = T <= 2 ? 2 : 1;
        I s[split][T];  // AVX2: int16, 8 chunks of nibble products stay <= 30480; VNNI: int32
        for (int k = 0; k < split; ++k)
          for (int t = 0; t < T; ++t) s[k][t] = V::zero();
        for (int i = 0; i < 8; ++i) {
          const I v = V::load(panel + 32 * (8 * h + i), second);
          const I c = half ? high_nibbles<V>(v) : vand(v, low4);
          for (int t = 0; t < T; ++t)
            s[i % split][t] = tile_dot<T, V>(s[i % split][t], c, arow[t] + ab + q8_k_qs + 64 * h + 32 * half + 4 * i);
        }
        const I scale = lane_scales(q4_k_six_bits<V>(words, second, j < 4 ? 0 : 2), j % 4, false);
        for (int t = 0; t < T; ++t) {
          const I st = split == 2 ? byte_dot_sum(s[0][t], s[1][t]) : s[0][t];
          sumi[t] = chained(vadd32(sumi[t], byte_dot_scaled(half ? high_nibble_sum<V>(st) : st, scale)));
        }
      }
      // (min_2i, min_2i+1) int16 pairs in every lane, for the sub-block sums of the activations.
      const I mn_lo = q4_k_six_bits<V>(words, second, 1), mn_hi = q4_k_six_bits<V>(words, second, 3);
      const I mins[4] = {lane_byte_pairs(mn_lo, 0, true, false), lane_byte_pairs(mn_lo, 2, true, false),
                         lane_byte_pairs(mn_hi, 0, true, false), lane_byte_pairs(mn_hi, 2, true, false)};
      const F dw = V::halves(panel + q4_k_d_at, second);
      const F dminw = V::halves(panel + q4_k_dmin_at, second);
      for (int t = 0; t < T; ++t) {
        const uint8_t* blk = arow[t] + ab;
        // Sums of the 8 sub-blocks (two bsums each), as int16 pairs (sub-blocks 2i, 2i+1).
        const __m128i pairs = _mm_hadd_epi16(load128(blk + q8_k_bsums), load128(blk + q8_k_bsums + 16));
        I min_term = vmadd16(mins[0], V::spread_word(pairs, 0));
        for (int k = 1; k < 4; ++k) min_term = vadd32(min_term, vmadd16(mins[k], V::spread_word(pairs, k)));
        float da;
        std::memcpy(&da, blk, 4);
        const F vda = V::set1_f(da);
        const F p = vsub(rounded(vmul(vmul(dw, vda), vcvt(sumi[t]))), rounded(vmul(vmul(dminw, vda), vcvt(min_term))));
        acc[t] = vadd(acc[t], p);
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n);
  }
};

// T tokens (1-3), 8 rows at a time straight from the file layout: each row's integer work is
// dot_q4_k's, but the activation's sub-block sums are formed once per block, the 8 rows' isum and
// min_term are reduced together by one hadd tree, and the float chain runs with the 8 rows in the
// lanes (the per-row dot spent about a third of its time on those parts). A row's codes and scales
// are unpacked once for all T tokens.
template <int T>
struct gemv_q4_k_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    const block_q8_k* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = reinterpret_cast<const block_q8_k*>(a.data + size_t(t0 + t) * a.stride);
    const int64_t nb = w.n_in / 256;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    gemv_groups<T>(w, r0, r1, nb, y, ys, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
      __m128i pairs[T];
      for (int t = 0; t < T; ++t) pairs[t] = _mm_hadd_epi16(load128(arow[t][b].bsums), load128(arow[t][b].bsums + 8));
      const size_t wb = size_t(b) * sizeof(block_q4_k);
      // Per token and row: low 128 bits = 4 partial isums, high 128 bits = 4 partial min_terms.
      __m256i part[T][8];
      for (int r = 0; r < 8; ++r) {
        const auto& blk = *reinterpret_cast<const block_q4_k*>(rows[r] + wb);
        const __m128i sm = q4_k_scales_mins_bytes(blk.scales);
        const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
        const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        __m256i codes[8], sc[8];
        for (int h = 0; h < 4; ++h) {
          const __m256i packed = load256(blk.qs + 32 * h);
          codes[2 * h] = _mm256_and_si256(packed, low4);
          codes[2 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
          sc[2 * h] = _mm256_shuffle_epi8(scales, spread16(2 * h));
          sc[2 * h + 1] = _mm256_shuffle_epi8(scales, spread16(2 * h + 1));
        }
        for (int t = 0; t < T; ++t) {
          const int8_t* aq = arow[t][b].qs;
          __m256i sumi = _mm256_setzero_si256();
          for (int h = 0; h < 4; ++h) {
            const __m256i p_lo = _mm256_maddubs_epi16(codes[2 * h], load256(aq + 64 * h));
            const __m256i p_hi = _mm256_maddubs_epi16(codes[2 * h + 1], load256(aq + 64 * h + 32));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_lo, sc[2 * h]));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p_hi, sc[2 * h + 1]));
          }
          const __m128i isum4 = _mm_add_epi32(_mm256_castsi256_si128(sumi), _mm256_extracti128_si256(sumi, 1));
          part[t][r] = _mm256_inserti128_si256(_mm256_castsi128_si256(isum4), _mm_madd_epi16(mins, pairs[t]), 1);
        }
      }
      const __m256 dw = gather_halves(rows, wb);
      const __m256 dminw = gather_halves(rows, wb + 2);
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
        const __m256 d = _mm256_mul_ps(dw, vda);
        const __m256 dmin = _mm256_mul_ps(dminw, vda);
        acc[t] = _mm256_add_ps(acc[t], _mm256_sub_ps(rounded(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum))),
                                                     rounded(_mm256_mul_ps(dmin, _mm256_cvtepi32_ps(min_term)))));
      }
    });
  }
};

// ---- Q5_K ---------------------------------------------------------------------------------------
// Q4_K's nibbles, scales, mins and float chain, plus a fifth code bit per element: bit j of qh[l]
// belongs to element l of sub-block j (codes 0..31).

// Bit j of every byte of qh moved to bit 4 (the rest zero): the fifth bit of sub-block j's codes.
// Bits that the 16-bit shifts carry across a byte border land below bit 4 (left shifts by at most
// 4) or above it (right shifts), and the mask drops them.
template <class V>
typename V::i q5_k_fifth_bits(typename V::i qh, int j) {
  const typename V::i at4 = j < 4 ? vsll16(qh, 4 - j) : j == 4 ? qh : vsrl16(qh, j - 4);
  return vand(at4, V::set1_i8(0x10));
}

// Codes (0..31) of one Q5_K block in element order: vector j holds sub-block j's 32 codes.
void q5_k_codes(const block_q5_k& b, __m256i codes[8]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i qh = load256(b.qh);
  for (int h = 0; h < 4; ++h) {
    const __m256i packed = load256(b.qs + 32 * h);
    codes[2 * h] = _mm256_or_si256(_mm256_and_si256(packed, low4), q5_k_fifth_bits<rows8>(qh, 2 * h));
    codes[2 * h + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), low4),
                                       q5_k_fifth_bits<rows8>(qh, 2 * h + 1));
  }
}

// Products of codes up to 31 pair up to 2 * 31 * 128 = 7936 in a maddubs lane: each is widened by
// its scale madd at once (the int32 sums are far from any bound: 8 * 63 * 32 * 31 * 128).
float dot_q5_k(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q5_k*>(wv);
  const auto* a = static_cast<const block_q8_k*>(av);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const __m128i sm = q4_k_scales_mins_bytes(w[b].scales);
    const __m128i pairs = _mm_hadd_epi16(load128(a[b].bsums), load128(a[b].bsums + 8));
    const __m128i mt = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), pairs);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    __m256i codes[8];
    q5_k_codes(w[b], codes);
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i p = _mm256_maddubs_epi16(codes[j], load256(a[b].qs + 32 * j));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_shuffle_epi8(scales, spread16(j))));
    }
    const __m128i isum4 = _mm_add_epi32(_mm256_castsi256_si128(sumi), _mm256_extracti128_si256(sumi, 1));
    const __m128i both = _mm_hadd_epi32(_mm_hadd_epi32(isum4, mt), _mm_setzero_si128());
    const int isum = _mm_cvtsi128_si32(both), min_term = _mm_extract_epi32(both, 1);
    const float d = half_to_float(w[b].d) * a[b].d;
    const float dmin = half_to_float(w[b].dmin) * a[b].d;
    sum += rounded(d * float(isum)) - rounded(dmin * float(min_term));
  }
  return sum;
}

// Compact Q5_K panel of one super-block of 8 rows, exactly the bytes of the 8 file blocks (1408):
//   [0, 1024)     the code nibbles as Q4_K's cells (cell 8h + i: elements 4i..4i+3 of sub-blocks
//                 2h in the low nibbles and 2h + 1 in the high ones)
//   [1024, 1280)  the 32 qh bytes of each row as 8 cells [cell i][row r]: bit j of cell i's bytes
//                 is the fifth bit of elements 4i..4i+3 of sub-block j
//   [1280, 1376)  the 12 packed scale/min bytes as 3 words [word k][row r] (as Q4_K)
//   [1376, 1408)  d of the 8 rows, then dmin, as fp16
// Decode reads no more bytes than the file's rows; assembling a code costs a shift, two masks and
// an or on top of Q4_K's nibble (the qh cell is shared by the 8 sub-blocks).
constexpr size_t q5_k_packed = 1408;
constexpr size_t q5_k_qh_at = 1024, q5_k_scales_at = 1280, q5_k_d_at = 1376, q5_k_dmin_at = 1392;

void pack_q5_k(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_q5_k), q5_k_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    store_block_cells(blk, offsetof(block_q5_k, qs), 4, dst);
    store_block_cells(blk, offsetof(block_q5_k, qh), 1, dst + q5_k_qh_at);
    store_block_words(blk, offsetof(block_q5_k, scales), 3, dst + q5_k_scales_at);
    store_block_halves(blk, offsetof(block_q5_k, d), dst + q5_k_d_at);
    store_block_halves(blk, offsetof(block_q5_k, dmin), dst + q5_k_dmin_at);
  });
}

template <int T, class V>
struct gemm_q5_k_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n) {
    using I = typename V::i;
    using F = typename V::f;
    const uint8_t* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = a.data + size_t(t0 + t) * a.stride;
    const I low4 = V::set1_i8(0x0F);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q5_k_packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<q5_k_packed>(panel, second);
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const uint8_t* words = panel + q5_k_scales_at;
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
      // Chunks summed before their scale multiplies them: AVX2 sums int16 pairs of products up to
      // 7936, so 4 chunks (31744) fit and a sub-block takes two scale madds; VNNI sums in int32.
      constexpr int per_scale = byte_dot_vnni ? 8 : 4;
      // Few tokens: even and odd chunks in separate chains (as the Q4_K tile).
      constexpr int split = T <= 2 ? 2 : 1;
  #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int h = j / 2, half = j % 2;
        const I scale = lane_scales(q4_k_six_bits<V>(words, second, j < 4 ? 0 : 2), j % 4, false);
  #pragma GCC unroll 2
        for (int p = 0; p < 8 / per_scale; ++p) {
          I s[split][T];
          for (int k = 0; k < split; ++k)
            for (int t = 0; t < T; ++t) s[k][t] = V::zero();
  #pragma GCC unroll 8
          for (int i = per_scale * p; i < per_scale * (p + 1); ++i) {
            const I v = V::load(panel + 32 * (8 * h + i), second);
            const I nib = vand(half ? vsrl16(v, 4) : v, low4);
            const I c = vor(nib, q5_k_fifth_bits<V>(V::load(panel + q5_k_qh_at + 32 * i, second), j));
            for (int t = 0; t < T; ++t)
              s[i % split][t] = tile_dot<T, V>(s[i % split][t], c, arow[t] + ab + q8_k_qs + 32 * j + 4 * i);
          }
          for (int t = 0; t < T; ++t) {
            const I st = split == 2 ? byte_dot_sum(s[0][t], s[1][t]) : s[0][t];
            sumi[t] = chained(vadd32(sumi[t], byte_dot_scaled(st, scale)));
          }
        }
      }
      const I mn_lo = q4_k_six_bits<V>(words, second, 1), mn_hi = q4_k_six_bits<V>(words, second, 3);
      const I mins[4] = {lane_byte_pairs(mn_lo, 0, true, false), lane_byte_pairs(mn_lo, 2, true, false),
                         lane_byte_pairs(mn_hi, 0, true, false), lane_byte_pairs(mn_hi, 2, true, false)};
      const F dw = V::halves(panel + q5_k_d_at, second);
      const F dminw = V::halves(panel + q5_k_dmin_at, second);
      for (int t = 0; t < T; ++t) {
        const uint8_t* blk = arow[t] + ab;
        const __m128i pairs = _mm_hadd_epi16(load128(blk + q8_k_bsums), load128(blk + q8_k_bsums + 16));
        I min_term = vmadd16(mins[0], V::spread_word(pairs, 0));
        for (int k = 1; k < 4; ++k) min_term = vadd32(min_term, vmadd16(mins[k], V::spread_word(pairs, k)));
        float da;
        std::memcpy(&da, blk, 4);
        const F vda = V::set1_f(da);
        const F p = vsub(rounded(vmul(vmul(dw, vda), vcvt(sumi[t]))), rounded(vmul(vmul(dminw, vda), vcvt(min_term))));
        acc[t] = vadd(acc[t], p);
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n);
  }
};

// T tokens (1-3), 8 rows at a time from the file layout: gemv_q4_k_tokens with 5-bit codes (each
// maddubs result widened by its scale madd at once, as in dot_q5_k).
template <int T>
struct gemv_q5_k_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    const block_q8_k* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = reinterpret_cast<const block_q8_k*>(a.data + size_t(t0 + t) * a.stride);
    const int64_t nb = w.n_in / 256;
    gemv_groups<T>(w, r0, r1, nb, y, ys, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
      __m128i pairs[T];
      for (int t = 0; t < T; ++t) pairs[t] = _mm_hadd_epi16(load128(arow[t][b].bsums), load128(arow[t][b].bsums + 8));
      const size_t wb = size_t(b) * sizeof(block_q5_k);
      // Per token and row: low 128 bits = 4 partial isums, high 128 bits = 4 partial min_terms.
      __m256i part[T][8];
      for (int r = 0; r < 8; ++r) {
        const auto& blk = *reinterpret_cast<const block_q5_k*>(rows[r] + wb);
        const __m128i sm = q4_k_scales_mins_bytes(blk.scales);
        const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
        const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        __m256i codes[8], sc[8];
        q5_k_codes(blk, codes);
        for (int j = 0; j < 8; ++j) sc[j] = _mm256_shuffle_epi8(scales, spread16(j));
        for (int t = 0; t < T; ++t) {
          __m256i sumi = _mm256_setzero_si256();
          for (int j = 0; j < 8; ++j) {
            const __m256i p = _mm256_maddubs_epi16(codes[j], load256(arow[t][b].qs + 32 * j));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc[j]));
          }
          const __m128i isum4 = _mm_add_epi32(_mm256_castsi256_si128(sumi), _mm256_extracti128_si256(sumi, 1));
          part[t][r] = _mm256_inserti128_si256(_mm256_castsi128_si256(isum4), _mm_madd_epi16(mins, pairs[t]), 1);
        }
      }
      const __m256 dw = gather_halves(rows, wb + offsetof(block_q5_k, d));
      const __m256 dminw = gather_halves(rows, wb + offsetof(block_q5_k, dmin));
      for (int t = 0; t < T; ++t) {
        const __m256i* pt = part[t];
        const __m256i h01 = _mm256_hadd_epi32(pt[0], pt[1]), h23 = _mm256_hadd_epi32(pt[2], pt[3]);
        const __m256i h45 = _mm256_hadd_epi32(pt[4], pt[5]), h67 = _mm256_hadd_epi32(pt[6], pt[7]);
        const __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
        const __m256i isum = _mm256_permute2x128_si256(h0123, h4567, 0x20);
        const __m256i min_term = _mm256_permute2x128_si256(h0123, h4567, 0x31);
        const __m256 vda = _mm256_set1_ps(arow[t][b].d);
        const __m256 d = _mm256_mul_ps(dw, vda);
        const __m256 dmin = _mm256_mul_ps(dminw, vda);
        acc[t] = _mm256_add_ps(acc[t], _mm256_sub_ps(rounded(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum))),
                                                     rounded(_mm256_mul_ps(dmin, _mm256_cvtepi32_ps(min_term)))));
      }
    });
  }
};

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
template <class V>
typename V::i q3_k_high_bits(typename V::i hm, int k) {
  const typename V::i at2 = k < 2 ? vsll16(hm, 2 - k) : k == 2 ? hm : vsrl16(hm, k - 2);
  return vand(at2, V::set1_i8(0x04));
}

// Codes (0..7) of one Q3_K block in element order: vector k holds slice k's 32 codes.
void q3_k_codes(const block_q3_k& b, __m256i q[8]) {
  const __m256i low2 = _mm256_set1_epi8(0x03);
  const __m256i hm = load256(b.hmask);
  for (int h = 0; h < 2; ++h) {
    const __m256i qs = load256(b.qs + 32 * h);
    for (int s = 0; s < 4; ++s)
      q[4 * h + s] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), low2),
                                     q3_k_high_bits<rows8>(hm, 4 * h + s));
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

// Compact Q3_K panel of one super-block of 8 rows, exactly the bytes of the 8 file blocks (880):
//   [0, 512)    the 64 qs bytes of each row as 16 cells [cell][row]: cell 8h + i holds, in bits
//               2s..2s+1, the low code bits of elements 4i..4i+3 of slice 4h + s
//   [512, 768)  the 32 hmask bytes as 8 cells: bit k of cell i = high bit of elements 4i..4i+3 of
//               slice k
//   [768, 864)  the 12 packed scale bytes as 3 words [word][row]
//   [864, 880)  d of the 8 rows as fp16
constexpr size_t q3_k_packed = 880;
constexpr size_t q3_k_hmask_at = 512, q3_k_scales_at = 768, q3_k_d_at = 864;

void pack_q3_k(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_q3_k), q3_k_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    store_block_cells(blk, offsetof(block_q3_k, qs), 2, dst);
    store_block_cells(blk, offsetof(block_q3_k, hmask), 1, dst + q3_k_hmask_at);
    store_block_words(blk, offsetof(block_q3_k, scales), 3, dst + q3_k_scales_at);
    store_block_halves(blk, offsetof(block_q3_k, d), dst + q3_k_d_at);
  });
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
    const I low2 = V::set1_i8(0x03);
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q3_k_packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<q3_k_packed>(panel, second);
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const uint8_t* words = panel + q3_k_scales_at;
      I sc[4];
      for (int m = 0; m < 4; ++m) sc[m] = q3_k_scale_word<V>(words, second, m);
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
  #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const int h = k / 4, s = k % 4;
  #pragma GCC unroll 2
        for (int q = 0; q < 2; ++q) {
          const int g = 2 * k + q;
          const I scale = lane_scales(sc[g / 4], g % 4, true);
          I acc_g[T];
          for (int t = 0; t < T; ++t) acc_g[t] = V::zero();
  #pragma GCC unroll 4
          for (int i = 4 * q; i < 4 * q + 4; ++i) {
            const I v = V::load(panel + 32 * (8 * h + i), second);
            const I low = vand(s ? vsrl16(v, 2 * s) : v, low2);
            const I code = vor(low, q3_k_high_bits<V>(V::load(panel + q3_k_hmask_at + 32 * i, second), k));
            for (int t = 0; t < T; ++t) acc_g[t] = tile_dot<T, V>(acc_g[t], code, arow[t] + ab + q8_k_qs + 32 * k + 4 * i);
          }
          for (int t = 0; t < T; ++t) sumi[t] = chained(vadd32(sumi[t], byte_dot_scaled(acc_g[t], scale)));
        }
      }
      // 4 * sum_g s_g * bsum_g, two groups per madd.
      I offset[T];
      for (int t = 0; t < T; ++t) offset[t] = V::zero();
      for (int i = 0; i < 8; ++i) {
        const I pairs = lane_byte_pairs(sc[i / 2], 2 * (i % 2), true, true);
        for (int t = 0; t < T; ++t) offset[t] = vadd32(offset[t], vmadd16(pairs, V::bcast4(arow[t] + ab + q8_k_bsums + 4 * i)));
      }
      const F dw = V::halves(panel + q3_k_d_at, second);
      for (int t = 0; t < T; ++t) {
        const I isum = vsub32(sumi[t], vsll32(offset[t], 2));
        float da;
        std::memcpy(&da, arow[t] + ab, 4);
        acc[t] = vadd(acc[t], rounded(vmul(vmul(dw, V::set1_f(da)), vcvt(isum))));
      }
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
      if constexpr (T <= gemv_max_tokens) V::template prefetch<q2_k_packed>(panel, second);
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const uint8_t* words = panel + q2_k_scales_at;
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
  #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
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
// The byte dot products need unsigned weights, so a value enters as u = kv + 128 (1..241) and the
// offset leaves through the activation's group sums: sumi_g = sum u a - 128 (bsum_2g + bsum_2g+1).
// With VNNI u is one table lookup. maddubs pairs of u would reach 2 * 241 * 128 and saturate, so
// AVX2 splits u = 16 u_hi + u_lo (two lookups, both 0..15: eight chunks add in int16, 30720).
constexpr uint8_t iq4_u(int n) { return uint8_t(quant::kvalues_iq4nl[n] + 128); }
template <int Part>  // 0: u, 1: u >> 4, 2: u & 15
constexpr int8_t iq4_entry(int n) {
  return int8_t(Part == 0 ? iq4_u(n) : Part == 1 ? iq4_u(n) >> 4 : iq4_u(n) & 15);
}
template <int Part>
__m256i iq4_table() {
  return _mm256_setr_epi8(iq4_entry<Part>(0), iq4_entry<Part>(1), iq4_entry<Part>(2), iq4_entry<Part>(3), iq4_entry<Part>(4),
                          iq4_entry<Part>(5), iq4_entry<Part>(6), iq4_entry<Part>(7), iq4_entry<Part>(8), iq4_entry<Part>(9),
                          iq4_entry<Part>(10), iq4_entry<Part>(11), iq4_entry<Part>(12), iq4_entry<Part>(13),
                          iq4_entry<Part>(14), iq4_entry<Part>(15), iq4_entry<Part>(0), iq4_entry<Part>(1),
                          iq4_entry<Part>(2), iq4_entry<Part>(3), iq4_entry<Part>(4), iq4_entry<Part>(5), iq4_entry<Part>(6),
                          iq4_entry<Part>(7), iq4_entry<Part>(8), iq4_entry<Part>(9), iq4_entry<Part>(10),
                          iq4_entry<Part>(11), iq4_entry<Part>(12), iq4_entry<Part>(13), iq4_entry<Part>(14),
                          iq4_entry<Part>(15));
}

// Table lookup per byte (indices 0..15) in every lane-wise family, and a table in each family.
inline __m256i vlookup(__m256i table, __m256i idx) { return _mm256_shuffle_epi8(table, idx); }
inline two_i vlookup(two_i table, two_i idx) { return {vlookup(table.lo, idx.lo), vlookup(table.hi, idx.hi)}; }
template <class V, int Part>
typename V::i iq4_table_of() {
  if constexpr (std::is_same_v<V, rows8>) return iq4_table<Part>();
  else if constexpr (std::is_same_v<V, rows8x2>) return both(iq4_table<Part>());
#ifdef GLIA_PANEL_PAIRS
  else return _mm512_broadcast_i64x4(iq4_table<Part>());
#endif
}
#ifdef GLIA_PANEL_PAIRS
inline __m512i vlookup(__m512i table, __m512i idx) { return _mm512_shuffle_epi8(table, idx); }
#endif

// The 8 rows' fp16 scales_h at p (panel layout, [row]) as int32 lanes.
template <class V>
typename V::i iq4_xs_high_scales(const uint8_t* p, size_t second) {
  if constexpr (std::is_same_v<V, rows8>) return _mm256_cvtepu16_epi32(load128(p));
  else if constexpr (std::is_same_v<V, rows8x2>) return make_two(_mm256_cvtepu16_epi32(load128(p)), _mm256_cvtepu16_epi32(load128(p + second)));
#ifdef GLIA_PANEL_PAIRS
  else return _mm512_cvtepu16_epi32(_mm256_inserti128_si256(_mm256_castsi128_si256(load128(p)), load128(p + second), 1));
#endif
}

float dot_iq4_xs(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_iq4_xs*>(wv);
  const auto* a = static_cast<const block_q8_k*>(av);
  const __m256i t_hi = iq4_table<1>(), t_lo = iq4_table<2>();
  const __m256i sixteen = _mm256_set1_epi16(16), one = _mm256_set1_epi16(1);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const float d4d8 = half_to_float(w[b].d) * a[b].d;
    for (int g = 0; g < 8; ++g) {
      const __m256i idx = unpack_nibbles(w[b].qs + 16 * g);
      const __m256i act = load256(a[b].qs + 32 * g);
      const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(vlookup(t_hi, idx), act), sixteen),
                                         _mm256_madd_epi16(_mm256_maddubs_epi16(vlookup(t_lo, idx), act), one));
      const int sumi = hsum_i32(s) - 128 * (a[b].bsums[2 * g] + a[b].bsums[2 * g + 1]);
      const int ls = ((w[b].scales_l[g / 2] >> (4 * (g % 2))) & 0x0F) | ((w[b].scales_h >> (2 * g)) & 3) << 4;
      sum += rounded(d4d8 * float(ls - 32) * float(sumi));
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
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += iq4_xs_packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<iq4_xs_packed>(panel, second);
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
        I sumi[T];
        if constexpr (byte_dot_vnni) {
          const I table = iq4_table_of<V, 0>();
          for (int t = 0; t < T; ++t) sumi[t] = V::zero();
  #pragma GCC unroll 8
          for (int c = 0; c < 8; ++c) {
            const int i = c % 4, half = c / 4;
            const I v = V::load(panel + 32 * (4 * g + i), second);
            const I u = vlookup(table, vand(half ? vsrl16(v, 4) : v, low4));
            for (int t = 0; t < T; ++t)
              sumi[t] = tile_dot<T, V>(sumi[t], u, arow[t] + ab + q8_k_qs + 32 * g + 16 * half + 4 * i);
          }
        } else {
          const I t_hi = iq4_table_of<V, 1>(), t_lo = iq4_table_of<V, 2>();
          I s_hi[T], s_lo[T];
          for (int t = 0; t < T; ++t) s_hi[t] = s_lo[t] = V::zero();
  #pragma GCC unroll 8
          for (int c = 0; c < 8; ++c) {
            const int i = c % 4, half = c / 4;
            const I v = V::load(panel + 32 * (4 * g + i), second);
            const I idx = vand(half ? vsrl16(v, 4) : v, low4);
            const I u_hi = vlookup(t_hi, idx), u_lo = vlookup(t_lo, idx);
            for (int t = 0; t < T; ++t) {
              const I act = V::bcast4(arow[t] + ab + q8_k_qs + 32 * g + 16 * half + 4 * i);
              s_hi[t] = chained(byte_dot_add(s_hi[t], u_hi, act));
              s_lo[t] = chained(byte_dot_add(s_lo[t], u_lo, act));
            }
          }
          for (int t = 0; t < T; ++t)
            sumi[t] = vadd32(vmadd16(s_hi[t], V::set1_i32(0x00100010)), vmadd16(s_lo[t], V::set1_i32(0x00010001)));
        }
        // ls_g - 32 per row: low nibble from bits 4g.. of scales_l, top bits from bits 2g.. of scales_h.
        const I ls = vor(vand(vsrl32(sl, 4 * g), V::set1_i32(0x0F)), vsll32(vand(vsrl32(sh, 2 * g), V::set1_i32(3)), 4));
        const F fls = vcvt(vsub32(ls, V::set1_i32(32)));
        for (int t = 0; t < T; ++t) {
          int16_t bs[2];
          std::memcpy(bs, arow[t] + ab + q8_k_bsums + 4 * g, 4);
          const I isum = vsub32(sumi[t], V::set1_i32(128 * (bs[0] + bs[1])));
          acc[t] = vadd(acc[t], rounded(vmul(vmul(d4d8[t], fls), vcvt(isum))));
        }
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n);
  }
};

// T tokens (1-3) from the file layout: each output is dot_iq4_xs of its row. IQ4_XS panels are
// compact, so matmul prepares them at load and decode reads them through the gemm tile; this path
// only serves weights that were not prepared.
template <int T>
struct gemv_iq4_xs_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    for (int64_t r = r0; r < r1; ++r)
      for (int t = 0; t < T; ++t) y[size_t(t) * ys + size_t(r - r0)] = dot_iq4_xs(w.row(r), a.row(t0 + t), w.n_in);
  }
};

// ---- Q6_K ---------------------------------------------------------------------------------------

float dot_q6_k(const void* wv, const void* av, int64_t n) {
  const auto* w = static_cast<const block_q6_k*>(wv);
  const auto* a = static_cast<const block_q8_k*>(av);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b) {
    const __m128i sc8 = load128(w[b].scales);
    // 32 * sum_g scale_g * bsum_g, subtracted lane-wise before the single reduction.
    const __m256i offset = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), load256(a[b].bsums));
    __m256i q[8];
    q6_k_codes(w[b], q);
    __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 5));
    for (int k = 0; k < 8; ++k) {
      // 16 pair sums: lanes 0-7 cover the first 16 elements of slice k (group 2k), 8-15 group 2k+1.
      const __m256i p = _mm256_maddubs_epi16(q[k], load256(a[b].qs + 32 * k));
      const __m128i s8 = _mm_shuffle_epi8(sc8, _mm_setr_epi8(char(2 * k), char(2 * k), char(2 * k), char(2 * k), char(2 * k),
                                                             char(2 * k), char(2 * k), char(2 * k), char(2 * k + 1),
                                                             char(2 * k + 1), char(2 * k + 1), char(2 * k + 1),
                                                             char(2 * k + 1), char(2 * k + 1), char(2 * k + 1), char(2 * k + 1)));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_cvtepi8_epi16(s8)));
    }
    sum += rounded(half_to_float(w[b].d) * a[b].d * float(hsum_i32(sumi)));
  }
  return sum;
}

// Q6_K panels of one super-block of 8 rows (1680 bytes), in one of two code layouts:
//  - file layout (AVX-512 VNNI builds): the file blocks' bytes, the 128 low-nibble bytes (ql) of
//    each row as 32 cells [cell][row][4 bytes] at [0, 1024), the 64 high-bit bytes (qh) as 16
//    cells at [1024, 1536). Elements 4i..4i+3 (i < 8) of the four 32-element slices of half h come
//    from ql cells 16h + i (slices 0 and 2: low, high nibble) and 16h + 8 + i (slices 1 and 3), with
//    their top two bits from qh cell 8h + i (bits 0-1, 2-3, 4-5, 6-7 for slices 0-3);
//  - code layout (AVX2 builds), rearranged at load: per row 192 bytes as 48 cells at [0, 1536),
//    cell 24h + 8k + i (k < 3) holding elements 4i..4i+3 of slice k of half h as 6-bit codes in
//    bits 0-5 and, in bits 6-7, two bits of the same element of slice 3 (its code's bits 0-1 with
//    k = 0, 2-3 with k = 1, 4-5 with k = 2);
// then the 16 int8 scales as 4 words [word][row] at [1536, 1664) and d of the 8 rows as fp16.
// Assembling a code from the file layout costs a shift, two masks, an or and often a second shift
// (17 operations and 8 loads per 4 cells of codes); from the code layout three of four slices need
// one mask and the fourth gathers its bits with 8 operations (11 operations, 3 loads). Measured on
// Zen 5, one thread, in alternated `glia bench` runs (decode samples of the Q6_K kernel over the
// Q4_K kernel's): AVX2 0.50 -> 0.39, but AVX-512 VNNI 0.36 -> 0.39 (its dot products take the
// file layout's extra operations on other ports; in cache the code layout was 3-5% faster there,
// in decode slower), so each build keeps the layout its kernels run faster on.
constexpr bool q6_k_code_layout = !byte_dot_vnni;
constexpr size_t q6_k_qh_at = 1024, q6_k_scales_at = 1536, q6_k_d_at = 1664;

// The 192 code-layout bytes of one row's block, [96h + 32k + l] for the elements l of slices k < 3
// (32 elements per vector; the 16-bit shifts' stray bits are masked off).
void q6_k_panel_codes(const block_q6_k& b, uint8_t out[192]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30), bits67 = _mm256_set1_epi8(int8_t(0xC0));
  for (int h = 0; h < 2; ++h) {
    const __m256i lo02 = load256(b.ql + 64 * h), lo13 = load256(b.ql + 64 * h + 32), top = load256(b.qh + 32 * h);
    // Code of slice k: low nibble from lo02 (k even) or lo13, top two bits from bits 2k..2k+1 of top.
    const __m256i c0 = _mm256_or_si256(_mm256_and_si256(lo02, low4), _mm256_and_si256(_mm256_slli_epi16(top, 4), bits45));
    const __m256i c1 = _mm256_or_si256(_mm256_and_si256(lo13, low4), _mm256_and_si256(_mm256_slli_epi16(top, 2), bits45));
    const __m256i c2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo02, 4), low4), _mm256_and_si256(top, bits45));
    const __m256i c3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo13, 4), low4),
                                       _mm256_and_si256(_mm256_srli_epi16(top, 2), bits45));
    store256(out + 96 * h, _mm256_or_si256(c0, _mm256_and_si256(_mm256_slli_epi16(c3, 6), bits67)));
    store256(out + 96 * h + 32, _mm256_or_si256(c1, _mm256_and_si256(_mm256_slli_epi16(c3, 4), bits67)));
    store256(out + 96 * h + 64, _mm256_or_si256(c2, _mm256_and_si256(_mm256_slli_epi16(c3, 2), bits67)));
  }
}

void pack_q6_k(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_q6_k), q6_k_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    if constexpr (q6_k_code_layout) {
      uint8_t codes[8][192];
      const uint8_t* rows[8];
      for (int r = 0; r < 8; ++r) {
        q6_k_panel_codes(*reinterpret_cast<const block_q6_k*>(blk[r]), codes[r]);
        rows[r] = codes[r];
      }
      store_block_cells(rows, 0, 6, dst);
    } else {
      store_block_cells(blk, offsetof(block_q6_k, ql), 4, dst);
      store_block_cells(blk, offsetof(block_q6_k, qh), 2, dst + q6_k_qh_at);
    }
    store_block_words(blk, offsetof(block_q6_k, scales), 4, dst + q6_k_scales_at);
    store_block_halves(blk, offsetof(block_q6_k, d), dst + q6_k_d_at);
  });
}

// Codes (0..63) of elements 4i..4i+3 of slice k of half h, 8 rows (see pack_q6_k).
template <class V>
typename V::i q6_k_panel_code(const uint8_t* panel, size_t second, int h, int k, int i) {
  using I = typename V::i;
  if constexpr (q6_k_code_layout) {
    const uint8_t* cells = panel + 32 * (24 * h + i);
    if (k < 3) return vand(V::load(cells + 256 * k, second), V::set1_i8(0x3F));
    // Masking before the 16-bit shifts keeps the neighbouring byte's bits out.
    const I top = V::set1_i8(int8_t(0xC0));
    const I b01 = vsrl16(vand(V::load(cells, second), top), 6);
    const I b23 = vsrl16(vand(V::load(cells + 256, second), top), 4);
    const I b45 = vsrl16(vand(V::load(cells + 512, second), top), 2);
    return vor(vor(b01, b23), b45);
  } else {
    const I nib = V::load(panel + 32 * (16 * h + 8 * (k % 2) + i), second);
    const I qh = V::load(panel + q6_k_qh_at + 32 * (8 * h + i), second);
    const I low = vand(k < 2 ? nib : vsrl16(nib, 4), V::set1_i8(0x0F));
    const I top = k == 0 ? vsll16(qh, 4) : k == 1 ? vsll16(qh, 2) : k == 2 ? qh : vsrl16(qh, 2);
    return vor(low, vand(top, V::set1_i8(0x30)));
  }
}

template <int T, class V>
struct gemm_q6_k_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n) {
    using I = typename V::i;
    using F = typename V::f;
    const uint8_t* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = a.data + size_t(t0 + t) * a.stride;
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q6_k_packed) {
      if constexpr (T <= gemv_max_tokens) V::template prefetch<q6_k_packed>(panel, second);
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
      // Quarter q of half h: elements 4i..4i+3 of slice k for i in 4q..4q+3 make up 16-element group
      // 8h + 2k + q. Products pair up to 2 * 63 * 127, so with AVX2 two chunks at a time are summed
      // in int16 before the scale multiplies them; VNNI sums all four in int32.
      constexpr int per_scale = byte_dot_vnni ? 4 : 2;
  #pragma GCC unroll 4
      for (int hq = 0; hq < 4; ++hq) {
        const int h = hq / 2, q = hq % 2;
  #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const int g = 8 * h + 2 * k + q;
          const I scale = lane_scales(V::load(panel + q6_k_scales_at + 32 * (g / 4), second), g % 4, true);
          for (int p = 0; p < 4 / per_scale; ++p) {
            I s[T];
            for (int t = 0; t < T; ++t) s[t] = V::zero();
            for (int i = 4 * q + per_scale * p; i < 4 * q + per_scale * (p + 1); ++i) {
              const I code = q6_k_panel_code<V>(panel, second, h, k, i);
              for (int t = 0; t < T; ++t)
                s[t] = tile_dot<T, V>(s[t], code, arow[t] + ab + q8_k_qs + 128 * h + 32 * k + 4 * i);
            }
            for (int t = 0; t < T; ++t) sumi[t] = chained(vadd32(sumi[t], byte_dot_scaled(s[t], scale)));
          }
        }
      }
      // 32 * sum_g scale_g * bsum_g, two groups per madd (the codes above are unsigned q + 32).
      I offset[T];
      for (int t = 0; t < T; ++t) offset[t] = V::zero();
      for (int i = 0; i < 8; ++i) {
        const I pairs = lane_byte_pairs(V::load(panel + q6_k_scales_at + 32 * (i / 2), second), 2 * (i % 2), true, true);
        for (int t = 0; t < T; ++t) offset[t] = vadd32(offset[t], vmadd16(pairs, V::bcast4(arow[t] + ab + q8_k_bsums + 4 * i)));
      }
      const F dw = V::halves(panel + q6_k_d_at, second);
      for (int t = 0; t < T; ++t) {
        const I isum = vsub32(sumi[t], vsll32(offset[t], 5));
        float da;
        std::memcpy(&da, arow[t] + ab, 4);
        acc[t] = vadd(acc[t], rounded(vmul(vmul(dw, V::set1_f(da)), vcvt(isum))));
      }
    }
    for (int t = 0; t < T; ++t) V::store(y + size_t(t) * ys, acc[t], n);
  }
};

// T tokens (1-3), 8 rows at a time (as gemv_q4_k): dot_q6_k's integer work per row, one reduction
// for the 8 rows, the float chain with the rows in the lanes; a row's 6-bit codes and scales are
// assembled once for all T tokens.
template <int T>
struct gemv_q6_k_tokens {
  static void run(const weight_view& w, int64_t r0, int64_t r1, const act_rows& a, int64_t t0, float* y,
                  size_t ys) {
    const block_q8_k* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = reinterpret_cast<const block_q8_k*>(a.data + size_t(t0 + t) * a.stride);
    const int64_t nb = w.n_in / 256;
    gemv_groups<T>(w, r0, r1, nb, y, ys, [&](const uint8_t* const rows[8], int64_t b, __m256* acc) {
      __m256i bsums[T];
      for (int t = 0; t < T; ++t) bsums[t] = load256(arow[t][b].bsums);
      const size_t wb = size_t(b) * sizeof(block_q6_k);
      __m256i part[T][8];
      for (int r = 0; r < 8; ++r) {
        const auto& blk = *reinterpret_cast<const block_q6_k*>(rows[r] + wb);
        const __m128i sc8 = load128(blk.scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        __m256i q[8], sc[8];
        q6_k_codes(blk, q);
        for (int k = 0; k < 8; ++k) {
          // Scale of group 2k in lanes 0-7, of group 2k+1 in lanes 8-15.
          const __m128i s8 = _mm_shuffle_epi8(sc8, _mm_set_epi64x(0x0101010101010101LL * (2 * k + 1), 0x0101010101010101LL * (2 * k)));
          sc[k] = _mm256_cvtepi8_epi16(s8);
        }
        for (int t = 0; t < T; ++t) {
          const __m256i offset = _mm256_madd_epi16(sc16, bsums[t]);
          __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 5));
          for (int k = 0; k < 8; ++k) {
            const __m256i p = _mm256_maddubs_epi16(q[k], load256(arow[t][b].qs + 32 * k));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc[k]));
          }
          part[t][r] = sumi;
        }
      }
      const __m256 dw = gather_halves(rows, wb + offsetof(block_q6_k, d));
      for (int t = 0; t < T; ++t) {
        const __m256i isum = hsum_8x_i32(part[t]);
        const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(arow[t][b].d));
        acc[t] = _mm256_add_ps(acc[t], rounded(_mm256_mul_ps(d, _mm256_cvtepi32_ps(isum))));
      }
    });
  }
};

// Decode: how one-token matmuls read panels where the build has rows16 (see decode_panels).
template <decode_panels Decode>
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
