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
//  - Q5_K (1408 bytes, see pack_q5_k): the file's code bytes as Q4_K's cells plus the fifth code
//    bits as 8 more cells, or (AVX2 builds) the 5-bit codes rearranged at load so that five of
//    eight need one mask; scale words and fp16 values as Q4_K;
//  - Q3_K (880 bytes, see pack_q3_k): the 3-bit codes rearranged at load so that six of eight need
//    a mask or a shift and a mask, the packed 6-bit scale words (decoded lane-wise in the kernel)
//    and d;
//  - Q2_K (compact, 672 bytes: the file's bytes, see pack_q2_k): the 2-bit code bytes as cells,
//    the 4-bit scale/min bytes as words, d and dmin;
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

// The code cells of a panel rearranged at load: Codes(block, out) writes a row's Bytes code bytes
// (element positions in 32-byte vectors), stored as the cells of store_block_cells.
template <size_t Bytes, class Block, class Codes>
void store_code_cells(const uint8_t* const blk[8], Codes codes_of, uint8_t* dst) {
  uint8_t codes[8][Bytes];
  const uint8_t* rows[8];
  for (int r = 0; r < 8; ++r) {
    codes_of(*reinterpret_cast<const Block*>(blk[r]), codes[r]);
    rows[r] = codes[r];
  }
  store_block_cells(rows, 0, int(Bytes / 32), dst);
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

// The end of a Q4_K or Q5_K block (their scale words are alike): acc[t] += (dw * da) * isum -
// (dmin_w * da) * min_term, min_term = sum_j min_j * (the activation's sum over sub-block j).
template <int T, class V>
[[gnu::always_inline]] inline void fold_scale_min_block(const uint8_t* words, const uint8_t* d_at, const uint8_t* dmin_at,
                                                        size_t second, const uint8_t* const arow[T], size_t ab,
                                                        const typename V::i sumi[T], typename V::f acc[T]) {
  using I = typename V::i;
  using F = typename V::f;
  // (min_2i, min_2i+1) int16 pairs in every lane, for the sub-block sums of the activations.
  const I mn_lo = q4_k_six_bits<V>(words, second, 1), mn_hi = q4_k_six_bits<V>(words, second, 3);
  const I mins[4] = {lane_byte_pairs(mn_lo, 0, true, false), lane_byte_pairs(mn_lo, 2, true, false),
                     lane_byte_pairs(mn_hi, 0, true, false), lane_byte_pairs(mn_hi, 2, true, false)};
  const F dw = V::halves(d_at, second);
  const F dminw = V::halves(dmin_at, second);
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

// The end of a Q6_K or Q3_K block, whose codes entered the byte dot products as q + 2^Shift: isum =
// sumi - 2^Shift * sum_g scale_g * bsum_g (two groups per madd; scale_word(m) holds the int8 scales
// of groups 4m..4m+3 in every lane), then acc[t] += (dw * da) * isum.
template <int T, class V, int Shift, class ScaleWord>
[[gnu::always_inline]] inline void fold_offset_block(ScaleWord scale_word, const uint8_t* d_at, size_t second,
                                                     const uint8_t* const arow[T], size_t ab, const typename V::i sumi[T],
                                                     typename V::f acc[T]) {
  using I = typename V::i;
  using F = typename V::f;
  I offset[T];
  for (int t = 0; t < T; ++t) offset[t] = V::zero();
  for (int i = 0; i < 8; ++i) {
    const I pairs = lane_byte_pairs(scale_word(i / 2), 2 * (i % 2), true, true);
    for (int t = 0; t < T; ++t) offset[t] = vadd32(offset[t], vmadd16(pairs, V::bcast4(arow[t] + ab + q8_k_bsums + 4 * i)));
  }
  const F dw = V::halves(d_at, second);
  for (int t = 0; t < T; ++t) {
    const I isum = vsub32(sumi[t], vsll32(offset[t], Shift));
    float da;
    std::memcpy(&da, arow[t] + ab, 4);
    acc[t] = vadd(acc[t], rounded(vmul(vmul(dw, V::set1_f(da)), vcvt(isum))));
  }
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
      const size_t ab = size_t(b) * sizeof(block_q8_k);
      const uint8_t* words = panel + q4_k_scales_at;
      I sumi[T];
      for (int t = 0; t < T; ++t) sumi[t] = V::zero();
      // Sub-block j = 2h + half: the low (half 0) or high (half 1) nibbles of cells 8h..8h+7.
  #pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int h = j / 2, half = j % 2;
        if constexpr (T <= gemv_max_tokens) if (half == 0) decode_prefetch<V, q4_k_packed, 4>(panel, second, h);
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
      fold_scale_min_block<T, V>(words, panel + q4_k_d_at, panel + q4_k_dmin_at, second, arow, ab, sumi, acc);
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

// Q5_K panels of one super-block of 8 rows (1408 bytes), in one of two code layouts:
//  - file layout: the file blocks' bytes, the code nibbles as Q4_K's cells at [0, 1024) (cell
//    8h + i: elements 4i..4i+3 of sub-blocks 2h in the low nibbles and 2h + 1 in the high ones),
//    the 32 qh bytes of each row as 8 cells at [1024, 1280) (bit j of cell i's bytes is the fifth
//    bit of elements 4i..4i+3 of sub-block j);
//  - code layout, rearranged at load: per row 160 bytes as 40 cells at [0, 1280), cell 8v + i
//    holding elements 4i..4i+3 of sub-block v (v < 5) as 5-bit codes in bits 0-4, with the codes of
//    sub-blocks 5-7 spread over bits 5-7 (see q5_k_panel_codes);
// then the 12 packed scale/min bytes as 3 words [word][row] at [1280, 1376) (as Q4_K) and d of the
// 8 rows, then dmin, as fp16. From the file layout a code costs a mask, a shift and a mask for its
// fifth bit, an or and for odd sub-blocks a shift (35 operations and 16 loads per 8 sub-blocks of
// a cell); from the code layout five of eight need one mask, the others 5 to 8 operations (23
// operations, 5 loads). Measured on Zen 5 (in cache, B/cycle of one token in two streams; gemm
// MAC/cycle; Q5_K_M decode with 2 threads, medians of three alternated runs): AVX2 9.3 -> 11.4,
// 26.1 -> 30.5, 46.6 -> 51.6 t/s; AVX-512 VNNI 16.6 -> 14.2 in cache (its dot products leave the
// file layout's extra operations room on other ports), so VNNI builds keep the file layout.
constexpr size_t q5_k_packed = 1408;
constexpr size_t q5_k_qh_at = 1024, q5_k_scales_at = 1280, q5_k_d_at = 1376, q5_k_dmin_at = 1392;
constexpr bool q5_k_code_layout = !byte_dot_vnni;

// The 160 code-layout bytes of one row's block, [32v + l] for element l of vector v (c_j: the
// element's code in sub-block j, 0..31; bits of c5..c7 from low to high):
//   v = 0: c0 | c5 bits 0-2 << 5      v = 1: c1 | c5 bits 3-4 << 5 | c6 bit 0 << 7
//   v = 2: c2 | c6 bits 1-3 << 5      v = 3: c3 | c6 bit 4 << 5 | c7 bits 0-1 << 6
//   v = 4: c4 | c7 bits 2-4 << 5
void q5_k_panel_codes(const block_q5_k& b, uint8_t out[160]) {
  __m256i c[8];
  q5_k_codes(b, c);
  // Bits lo..lo+n-1 of codes q moved to bit `at` (16-bit shifts: the mask keeps bytes apart).
  const auto bits = [](__m256i q, int lo, int n, int at) {
    const __m256i field = _mm256_and_si256(_mm256_srli_epi16(q, lo), _mm256_set1_epi8(int8_t((1 << n) - 1)));
    return _mm256_slli_epi16(field, at);
  };
  const __m256i top[5] = {bits(c[5], 0, 3, 5), _mm256_or_si256(bits(c[5], 3, 2, 5), bits(c[6], 0, 1, 7)), bits(c[6], 1, 3, 5),
                          _mm256_or_si256(bits(c[6], 4, 1, 5), bits(c[7], 0, 2, 6)), bits(c[7], 2, 3, 5)};
  for (int v = 0; v < 5; ++v) store256(out + 32 * v, _mm256_or_si256(c[v], top[v]));
}

void pack_q5_k(const weight_view& w, int64_t r0, int n_rows, uint8_t* out) {
  pack_group_blocks(w, r0, n_rows, 256, sizeof(block_q5_k), q5_k_packed, out, [](const uint8_t* const blk[8], uint8_t* dst) {
    if constexpr (q5_k_code_layout) {
      store_code_cells<160, block_q5_k>(blk, q5_k_panel_codes, dst);
    } else {
      store_block_cells(blk, offsetof(block_q5_k, qs), 4, dst);
      store_block_cells(blk, offsetof(block_q5_k, qh), 1, dst + q5_k_qh_at);
    }
    store_block_words(blk, offsetof(block_q5_k, scales), 3, dst + q5_k_scales_at);
    store_block_halves(blk, offsetof(block_q5_k, d), dst + q5_k_d_at);
    store_block_halves(blk, offsetof(block_q5_k, dmin), dst + q5_k_dmin_at);
  });
}

// Codes (0..31) of elements 4i..4i+3 of sub-block j, 8 rows (see pack_q5_k).
template <class V>
[[gnu::always_inline]] inline typename V::i q5_k_panel_code(const uint8_t* panel, size_t second, int j, int i) {
  using I = typename V::i;
  if constexpr (q5_k_code_layout) {
    const uint8_t* cells = panel + 32 * i;
    if (j < 5) return vand(V::load(cells + 256 * j, second), V::set1_i8(0x1F));
    // Masked before the 16-bit shifts: the bits kept sit at or above the shift, so none crosses a
    // byte border.
    const I top3 = V::set1_i8(int8_t(0xE0));
    if (j == 5)
      return vor(vsrl16(vand(V::load(cells, second), top3), 5), vsrl16(vand(V::load(cells + 256, second), V::set1_i8(0x60)), 2));
    if (j == 6)
      return vor(vor(vsrl16(vand(V::load(cells + 256, second), V::set1_i8(int8_t(0x80))), 7),
                     vsrl16(vand(V::load(cells + 512, second), top3), 4)),
                 vsrl16(vand(V::load(cells + 768, second), V::set1_i8(0x20)), 1));
    return vor(vsrl16(vand(V::load(cells + 768, second), V::set1_i8(int8_t(0xC0))), 6),
               vsrl16(vand(V::load(cells + 1024, second), top3), 3));
  } else {
    const I v = V::load(panel + 32 * (8 * (j / 2) + i), second);
    const I nib = vand(j % 2 ? vsrl16(v, 4) : v, V::set1_i8(0x0F));
    return vor(nib, q5_k_fifth_bits<V>(V::load(panel + q5_k_qh_at + 32 * i, second), j));
  }
}

template <int T, class V>
struct gemm_q5_k_tile {
  static void run(const uint8_t* panel, size_t second, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys,
                  int n) {
    using I = typename V::i;
    using F = typename V::f;
    const uint8_t* arow[T];
    for (int t = 0; t < T; ++t) arow[t] = a.data + size_t(t0 + t) * a.stride;
    F acc[T];
    for (int t = 0; t < T; ++t) acc[t] = V::zero_f();
    for (int64_t b = 0; b < nb; ++b, panel += q5_k_packed) {
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
        if constexpr (T <= gemv_max_tokens) if (j % 2 == 0) decode_prefetch<V, q5_k_packed, 4>(panel, second, j / 2);
        const I scale = lane_scales(q4_k_six_bits<V>(words, second, j < 4 ? 0 : 2), j % 4, false);
  #pragma GCC unroll 2
        for (int p = 0; p < 8 / per_scale; ++p) {
          I s[split][T];
          for (int k = 0; k < split; ++k)
            for (int t = 0; t < T; ++t) s[k][t] = V::zero();
  #pragma GCC unroll 8
          for (int i = per_scale * p; i < per_scale * (p + 1); ++i) {
            const I c = q5_k_panel_code<V>(panel, second, j, i);
            for (int t = 0; t < T; ++t)
              s[i % split][t] = tile_dot<T, V>(s[i % split][t], c, arow[t] + ab + q8_k_qs + 32 * j + 4 * i);
          }
          for (int t = 0; t < T; ++t) {
            const I st = split == 2 ? byte_dot_sum(s[0][t], s[1][t]) : s[0][t];
            sumi[t] = chained(vadd32(sumi[t], byte_dot_scaled(st, scale)));
          }
        }
      }
      fold_scale_min_block<T, V>(words, panel + q5_k_d_at, panel + q5_k_dmin_at, second, arow, ab, sumi, acc);
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
      store_code_cells<192, block_q6_k>(blk, q6_k_panel_codes, dst);
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
[[gnu::always_inline]] inline typename V::i q6_k_panel_code(const uint8_t* panel, size_t second, int h, int k, int i) {
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
        if constexpr (T <= gemv_max_tokens) decode_prefetch<V, q6_k_packed, 4>(panel, second, hq);
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
      // The codes above are unsigned q + 32.
      fold_offset_block<T, V, 5>([&](int m) { return V::load(panel + q6_k_scales_at + 32 * m, second); },
                                 panel + q6_k_d_at, second, arow, ab, sumi, acc);
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

}  // namespace
}  // namespace glia::cpu
