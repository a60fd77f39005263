// Q4_K, Q5_K and Q6_K prefill on AMX tiles (Intel Sapphire Rapids and later): the AVX-512 VNNI
// k-quant kernels of mm_kquants_low_kernels.h, with a gemm that multiplies 16 tokens by 16 weight
// rows per tile instruction.
//
// A k-quant's integer sum of a super-block, isum = sum_g scale_g * (codes of group g . activations),
// weighs each group (Q4_K, Q5_K: 32 elements, 6-bit scales; Q6_K: 16, int8 scales) by its own
// scale. Folded into the weights, scale * code (Q4_K 0..945, Q5_K 0..1953, Q6_K -4096..4064) no
// longer fits a byte, so the panels are staged as two byte planes, hi = (scale * code) >> S and lo =
// (scale * code) & (2^S - 1) (S = 5, 6): isum = 2^S (hi . a) + (lo . a), both exact int32 tile sums
// over the whole super-block (4 tile instructions of 64 elements each), stored once per
// super-block. The min term of Q4_K and Q5_K (sum_j min_j * the activations' sub-block sums) and
// the reference's float step then run on AVX-512 as in the VNNI tiles, so the bits are the
// reference's.
#include "backend/cpu/mm_kquants_low_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

#include "backend/cpu/amx_tiles.h"

namespace glia::cpu {
namespace {

// One super-block of two panels side by side, staged for the tiles:
//   [0, 4096)     hi: 4 chunks of 64 elements, chunk k at 1024 k: 16 tile rows (elements 64k +
//                 4g..4g+3 in row g) of 64 bytes (the first panel's 8 weight rows x 4, then the
//                 second's)
//   [4096, 8192)  lo, likewise
//   [8192, 8224)  d of the 16 rows (fp16), [8224, 8256) Q4_K's dmin
//   [8256, 8512)  Q4_K's mins as int16 pairs: pair k (sub-blocks 2k, 2k+1) at 8256 + 64 k, 16 rows
constexpr size_t lo_at = 4096, d_at = 8192, dmin_at = 8224, mins_at = 8256;

// The tiles: two sums (C, 16 tokens x 16 int32: the high and the low plane's), the activations of
// 64 elements (A, 16 tokens x 64 bytes) and the two planes of 64 elements of 16 weight rows (B, 16 x
// 64 bytes).
#define GLIA_AMX_SUMS_HI 0
#define GLIA_AMX_SUMS_LO 1
#define GLIA_AMX_ACTS64 2
#define GLIA_AMX_PAIR64_HI 3
#define GLIA_AMX_PAIR64_LO 4
constexpr tile_config kquant_tiles{1, 0, {}, {64, 64, 64, 64, 64}, {16, 16, 16, 16, 16}};

// Byte j of every 32-bit lane of v (8 rows' entries), as 32 int16 (sign-extended if Signed): lane l
// holds row l / 4's entry, for the 4 bytes each row has in a tile row.
template <bool Signed>
__m512i row_entries16(__m256i v, int j) {
  const __m256i pick = _mm256_add_epi8(_mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4, 4,
                                                        4, 4, 8, 8, 8, 8, 12, 12, 12, 12),
                                       _mm256_set1_epi8(int8_t(j)));
  const __m256i bytes = _mm256_shuffle_epi8(v, pick);
  return Signed ? _mm512_cvtepi8_epi16(bytes) : _mm512_cvtepu8_epi16(bytes);
}

// Tile row g of chunk k of one panel: its codes (32 bytes, 4 per row, as int16) times the rows'
// scales (int16, as row_entries16 gives them), split into the two planes at `row` of out.
template <int Shift>
void store_planes(__m512i codes16, __m512i scale16, uint8_t* out, size_t row) {
  const __m512i scaled = _mm512_mullo_epi16(codes16, scale16);
  store256(out + row, _mm512_cvtepi16_epi8(_mm512_srai_epi16(scaled, Shift)));
  store256(out + lo_at + row, _mm512_cvtepi16_epi8(_mm512_and_si512(scaled, _mm512_set1_epi16((1 << Shift) - 1))));
}

// Q4_K, and with Fifth Q5_K (its fifth code bit per element, codes 0..31: scale x code <= 1953).
template <bool Fifth>
struct q4_k_like_amx {
  static constexpr size_t packed = Fifth ? q5_k_packed : q4_k_packed, pair_bytes = 8512;
  static constexpr size_t scales_at = Fifth ? q5_k_scales_at : q4_k_scales_at;
  static constexpr size_t w_d_at = Fifth ? q5_k_d_at : q4_k_d_at, w_dmin_at = Fifth ? q5_k_dmin_at : q4_k_dmin_at;
  static constexpr int shift = 5;
  static constexpr bool mins = true;
  static constexpr const tile_config& tiles = kquant_tiles;
  // One panel's super-block (pack_q4_k's layout, or pack_q5_k's file layout, which AVX-512 builds
  // use) into its half (0: first, 1: second) of a pair.
  static void stage(const uint8_t* blk, int half, uint8_t* out) {
    static_assert(!Fifth || !q5_k_code_layout, "AVX-512 builds keep Q5_K's file layout");
    const uint8_t* words = blk + scales_at;
    const __m256i scales[2] = {q4_k_six_bits<rows8>(words, 0, 0), q4_k_six_bits<rows8>(words, 0, 2)};
    const __m256i mins[2] = {q4_k_six_bits<rows8>(words, 0, 1), q4_k_six_bits<rows8>(words, 0, 3)};
    const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const size_t col = 32 * size_t(half);
    for (int k = 0; k < 4; ++k) {
      // Chunk k: sub-block 2k in the low nibbles of cells 8k..8k+7 (tile rows 0-7), sub-block 2k + 1
      // in their high nibbles (rows 8-15); Q5_K's fifth bits of sub-block j in bit j of qh cell i.
      for (int s = 0; s < 2; ++s) {
        const int j = 2 * k + s;
        const __m512i scale = row_entries16<false>(scales[j / 4], j % 4);
        for (int i = 0; i < 8; ++i) {
          const __m256i cell = load256(blk + 32 * (8 * k + i));
          __m256i codes = s == 0 ? _mm256_and_si256(cell, low4) : _mm256_and_si256(_mm256_srli_epi16(cell, 4), low4);
          if constexpr (Fifth) {
            const __m256i qh = load256(blk + q5_k_qh_at + 32 * i);
            codes = _mm256_or_si256(codes, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, j), one), 4));
          }
          store_planes<shift>(_mm512_cvtepu8_epi16(codes), scale, out, 1024 * size_t(k) + 64 * size_t(8 * s + i) + col);
        }
      }
      store256(out + mins_at + 64 * size_t(k) + col, lane_byte_pairs(mins[k / 2], 2 * (k % 2), true, false));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + d_at + 16 * half), load128(blk + w_d_at));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + dmin_at + 16 * half), load128(blk + w_dmin_at));
  }
  template <int T, class V>
  using tile = std::conditional_t<Fifth, gemm_q5_k_tile<T, V>, gemm_q4_k_tile<T, V>>;
};
using q4_k_amx = q4_k_like_amx<false>;
using q5_k_amx = q4_k_like_amx<true>;

struct q6_k_amx {
  static constexpr size_t packed = q6_k_packed, pair_bytes = 8256;
  static constexpr int shift = 6;
  static constexpr bool mins = false;
  static constexpr const tile_config& tiles = kquant_tiles;
  // One panel's super-block (pack_q6_k's file layout, which AVX-512 builds use) into its half of a
  // pair: element 128h + 32s + 4i + m takes its low nibble from ql cell 16h + 8(s % 2) + i (the
  // high nibble for s >= 2) and its top two bits from bits 2s..2s+1 of qh cell 8h + i; value q - 32,
  // group (of 16) 8h + 2s + i / 4.
  static void stage(const uint8_t* blk, int half, uint8_t* out) {
    static_assert(!q6_k_code_layout, "AVX-512 builds keep Q6_K's file layout");
    __m256i scale_words[4];
    for (int w = 0; w < 4; ++w) scale_words[w] = load256(blk + q6_k_scales_at + 32 * w);
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03), bias = _mm256_set1_epi8(32);
    const size_t col = 32 * size_t(half);
    for (int k = 0; k < 4; ++k) {
      const int h = k / 2;
      for (int g = 0; g < 16; ++g) {
        const int s = 2 * (k % 2) + g / 8, i = g % 8, group = 8 * h + 2 * s + i / 4;
        const __m256i ql = load256(blk + 32 * (16 * h + 8 * (s % 2) + i));
        const __m256i qh = load256(blk + q6_k_qh_at + 32 * (8 * h + i));
        const __m256i lo = s < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
        const __m256i top = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * s), low2);
        const __m256i value = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(top, 4)), bias);
        store_planes<shift>(_mm512_cvtepi8_epi16(value), row_entries16<true>(scale_words[group / 4], group % 4), out,
                            1024 * size_t(k) + 64 * size_t(g) + col);
      }
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + d_at + 16 * half), load128(blk + q6_k_d_at));
  }
  template <int T, class V>
  using tile = gemm_q6_k_tile<T, V>;
};

// The activations' sub-block sums of tokens [t0, t0 + n_tok) as int16 pairs: word k of token t's
// block b (at out + 4 (t nb + b) + k) = (S_2k, S_2k+1), S_j the sum of sub-block j's 32 quants.
void sub_block_pairs(const act_rows& a, int64_t t0, int64_t n_tok, int32_t* out) {
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t b = 0; b < a.nb; ++b, out += 4) {
      const uint8_t* blk = a.row(t0 + t) + size_t(b) * sizeof(block_q8_k);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                       _mm_hadd_epi16(load128(blk + q8_k_bsums), load128(blk + q8_k_bsums + 16)));
    }
}

// 16 tokens from t0 times one staged pair: y[t * ys + i] for the pair's first n_rows rows. The
// float step of super-block b runs after the tile instructions of b + 1 are issued. `pairs`: the
// tokens' sub-block sums (sub_block_pairs; Q4_K's min term).
template <class K>
void amx_pair(const uint8_t* pair, int64_t nb, const act_rows& a, int64_t t0, const int32_t* pairs, float* y, size_t ys,
              int n_rows) {
  alignas(64) int32_t hi[2][amx_tokens][16], lo[2][amx_tokens][16];
  __m512 acc[amx_tokens];
#pragma GCC unroll 16
  for (__m512& v : acc) v = _mm512_setzero_ps();
  const uint8_t* a0 = a.row(t0);
  for (int64_t b = 0; b <= nb; ++b) {
    if (b < nb) {
      const uint8_t* sb = pair + size_t(b) * K::pair_bytes;
      const uint8_t* aq = a0 + size_t(b) * sizeof(block_q8_k) + q8_k_qs;
      _tile_zero(GLIA_AMX_SUMS_HI);
      _tile_zero(GLIA_AMX_SUMS_LO);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        _tile_loadd(GLIA_AMX_ACTS64, aq + 64 * k, a.stride);
        _tile_loadd(GLIA_AMX_PAIR64_HI, sb + 1024 * k, 64);
        _tile_dpbssd(GLIA_AMX_SUMS_HI, GLIA_AMX_ACTS64, GLIA_AMX_PAIR64_HI);
        _tile_loadd(GLIA_AMX_PAIR64_LO, sb + lo_at + 1024 * k, 64);
        _tile_dpbssd(GLIA_AMX_SUMS_LO, GLIA_AMX_ACTS64, GLIA_AMX_PAIR64_LO);
      }
      _tile_stored(GLIA_AMX_SUMS_HI, hi[b % 2], 64);
      _tile_stored(GLIA_AMX_SUMS_LO, lo[b % 2], 64);
    }
    if (b == 0) continue;
    const int64_t pb = b - 1;
    const uint8_t* sb = pair + size_t(pb) * K::pair_bytes;
    const __m512 dw = _mm512_cvtph_ps(load256(sb + d_at));
    [[maybe_unused]] __m512i mins[4];
    [[maybe_unused]] __m512 dminw;
    if constexpr (K::mins) {
      for (int k = 0; k < 4; ++k) mins[k] = _mm512_load_si512(sb + mins_at + 64 * k);
      dminw = _mm512_cvtph_ps(load256(sb + dmin_at));
    }
#pragma GCC unroll 16
    for (int t = 0; t < amx_tokens; ++t) {
      const __m512i isum =
          vadd32(vsll32(_mm512_load_si512(hi[pb % 2][t]), K::shift), _mm512_load_si512(lo[pb % 2][t]));
      float da;
      std::memcpy(&da, a0 + size_t(t) * a.stride + size_t(pb) * sizeof(block_q8_k), 4);
      const __m512 vda = _mm512_set1_ps(da);
      if constexpr (K::mins) {
        // acc += (dw * da) * isum - (dmin * da) * min_term (fold_scale_min_block)
        const int32_t* sp = pairs + 4 * (t * nb + pb);
        __m512i min_term = vmadd16(mins[0], _mm512_set1_epi32(sp[0]));
        for (int k = 1; k < 4; ++k) min_term = vadd32(min_term, vmadd16(mins[k], _mm512_set1_epi32(sp[k])));
        const __m512 p = vsub(rounded(vmul(vmul(dw, vda), vcvt(isum))), rounded(vmul(vmul(dminw, vda), vcvt(min_term))));
        acc[t] = vadd(acc[t], p);
      } else {
        // acc += (dw * da) * isum (fold_offset_block)
        acc[t] = vadd(acc[t], rounded(vmul(vmul(dw, vda), vcvt(isum))));
      }
    }
  }
  store_tile_rows(acc, y, ys, n_rows);
}

// mm_kernel::gemm (amx_gemm), with the tokens' sub-block sums formed first for a min term.
template <class K, decode_form Decode>
void gemm_amx(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, const act_rows& a, int64_t t0,
              int64_t n_tok, float* y, size_t ys, int last_rows) {
  thread_local aligned_buffer sums;
  int32_t* pairs = nullptr;
  const int64_t n_amx = n_tok / amx_tokens * amx_tokens;
  if (K::mins && n_amx > 0) {
    pairs = reinterpret_cast<int32_t*>(sums.get(size_t(n_amx * nb) * 16));
    sub_block_pairs(a, t0, n_amx, pairs);
  }
  amx_gemm<K, Decode>(panels, panel_bytes, n_panels, nb, a, t0, n_tok, y, ys, last_rows,
                      [&](const uint8_t* pair, int64_t t, float* yt, int rows) {
                        amx_pair<K>(pair, nb, a, t0 + t, pairs ? pairs + 4 * t * nb : nullptr, yt, ys, rows);
                      });
}

}  // namespace

std::span<const mm_kernel> avx512amx_mm_kquants(bool amd_form) {
  return amx_tables<single_spread, panel_pairs>(amd_form, [](auto form) {
    return amx_table(kquant_kernels<form()>,
                     {{dtype::q4_k, gemm_amx<q4_k_amx, form()>},
                      {dtype::q5_k, gemm_amx<q5_k_amx, form()>},
                      {dtype::q6_k, gemm_amx<q6_k_amx, form()>}});
  });
}

}  // namespace glia::cpu
