// Q8_0 and Q4_0 prefill on AMX tiles (Intel Sapphire Rapids and later): the AVX-512 VNNI kernels of
// mm_legacy_kernels.h, with a gemm that multiplies 16 tokens by 16 weight rows per tile instruction.
//
// One TDPBSSD takes a tile of 16 tokens' activation quants (A: 16 rows of one block's 32 bytes,
// read in place from the activation rows) and two panels' block as signed bytes (B, see
// pair_block_bytes) to 16 x 16 exact int32 block sums, the reference's isum. The float step of the
// reference then runs on AVX-512 as in the VNNI tiles, so the bits are the reference's. A tile
// instruction does 8192 multiply-adds where the VNNI tiles need 128 vpdpbusd: the int8 work moves
// off the vector ports, which keep the float step.
#include "backend/cpu/mm_legacy_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

#include "backend/cpu/amx_tiles.h"

namespace glia::cpu {
namespace {

// A block of two panels side by side, the B tile's layout: 8 rows of 64 bytes (row g: elements
// 4g..4g+3 of the first panel's 8 rows as signed bytes, then of the second's), then the 16 row
// scales (fp16: the first panel's 8, the second's). A tile row of 64 bytes costs the tile store
// what one of 32 does (~16 rows per store either way, measured), so 16 weight rows per tile
// instruction halve the tile traffic per multiply-add against one panel's 8 (in cache, 16 tokens:
// 60 -> 33 TSC ticks per 8192 multiply-adds for the tile instructions alone).
constexpr size_t pair_block_bytes = 8 * 64 + 32;

// The tiles, two sets of three so that a block's tile work starts while the last one's is stored:
// set s = sums (C, 16 tokens x 16 int32), activations (A, 16 tokens x one block's 32 bytes) and a
// pair block (B, 8 x 64 bytes).
#define GLIA_AMX_SUMS0 0
#define GLIA_AMX_SUMS1 1
#define GLIA_AMX_ACTS0 2
#define GLIA_AMX_ACTS1 3
#define GLIA_AMX_PAIR0 4
#define GLIA_AMX_PAIR1 5
constexpr tile_config legacy_tiles{1, 0, {}, {64, 64, 32, 32, 64, 64}, {16, 16, 16, 16, 8, 8}};

// A panel block's 8 fp16 row scales into their half of a pair block.
void store_scales(const uint8_t* scales, int half, uint8_t* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 512 + 16 * half), load128(scales));
}

// What differs between the types: how a panel block becomes signed bytes (stage: into its half of
// a pair block, codes at 32 * half of each row, scales at 512 + 16 * half), and the reference's
// float step for a block (the VNNI tile's, for tokens outside whole AMX tiles).
struct q8_0_amx {
  static constexpr size_t packed = q8_0_packed, pair_bytes = pair_block_bytes;
  static constexpr const tile_config& tiles = legacy_tiles;
  // Row g of the pair block from a panel block's cells: Q8_0's cell g is elements 4g..4g+3.
  static void stage(const uint8_t* panel_block, int half, uint8_t* out) {
    for (int g = 0; g < 8; ++g) store256(out + 64 * g + 32 * half, load256(panel_block + 32 * g));
    store_scales(panel_block + 256, half, out);
  }
  // sum += isum * (dw * da), the product rounded on its own
  static __m512 step(__m512 acc, __m512 isum, __m512 dw, __m512 da) {
    return vadd(acc, rounded(vmul(isum, vmul(dw, da))));
  }
  template <int T, class V>
  using tile = gemm_q8_0_tile<T, V>;
};
struct q4_0_amx {
  static constexpr size_t packed = q4_0_packed, pair_bytes = pair_block_bytes;
  static constexpr const tile_config& tiles = legacy_tiles;
  // Q4_0's cell c holds elements 4c..4c+3 in its low nibbles and 16+4c.. in its high ones, as q + 8.
  static void stage(const uint8_t* panel_block, int half, uint8_t* out) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
    for (int c = 0; c < 4; ++c) {
      const __m256i v = load256(panel_block + 32 * c);
      store256(out + 64 * c + 32 * half, _mm256_sub_epi8(_mm256_and_si256(v, low4), eight));
      store256(out + 64 * (c + 4) + 32 * half, _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), eight));
    }
    store_scales(panel_block + 128, half, out);
  }
  // sum += isum * dw * da, left to right, the product rounded on its own
  static __m512 step(__m512 acc, __m512 isum, __m512 dw, __m512 da) {
    return vadd(acc, rounded(vmul(vmul(isum, dw), da)));
  }
  template <int T, class V>
  using tile = gemm_q4_0_tile<T, V>;
};

// The tile work of block b in tile set S (zeroed sums, activations, pair block, products), the
// activations' quants at aq (rows `stride` apart), the pair blocks at pair.
#define GLIA_AMX_BLOCK(S, b, aq, stride, pair)                                        \
  do {                                                                                \
    _tile_zero(GLIA_AMX_SUMS##S);                                                     \
    _tile_loadd(GLIA_AMX_ACTS##S, (aq) + size_t(b) * sizeof(block_q8_0), (stride));   \
    _tile_loadd(GLIA_AMX_PAIR##S, (pair) + size_t(b) * pair_block_bytes, 64);         \
    _tile_dpbssd(GLIA_AMX_SUMS##S, GLIA_AMX_ACTS##S, GLIA_AMX_PAIR##S);               \
  } while (0)

// The reference's float step of block b for the 16 tokens, from its stored sums s; token t's
// activation scale of block b at da[t * scale_stride + b].
template <class K>
[[gnu::always_inline]] inline void float_step(__m512 acc[amx_tokens], const uint8_t* pair, int64_t b,
                                              const int32_t (*s)[16], const float* da, int64_t scale_stride) {
  const __m512 dw = _mm512_cvtph_ps(load256(pair + size_t(b) * pair_block_bytes + 512));
#pragma GCC unroll 16
  for (int t = 0; t < amx_tokens; ++t)
    acc[t] = K::step(acc[t], vcvt(_mm512_load_si512(s[t])), dw, _mm512_set1_ps(da[t * scale_stride + b]));
}

// 16 tokens from t0 times one pair of interleaved panels: y[t * ys + i] for the pair's first n_rows
// rows (the first panel's 8, then the second's). Software-pipelined over the two tile sets: block
// b + 1's tile work is issued before block b's sums are stored, and block b - 1's float step runs
// after that store, reading sums stored an iteration earlier. Tile instructions on one register
// wait for each other, so with one set each block's zeroing waited for the last store and each
// store for its products (1.3x in PrefillGemmPerf; bench/RESULTS.md, session 33).
template <class K>
void amx_pair(const uint8_t* pair, int64_t nb, const act_rows& a, int64_t t0, float* y, size_t ys, int n_rows) {
  alignas(64) int32_t sums[2][amx_tokens][16];
  __m512 acc[amx_tokens];
#pragma GCC unroll 16
  for (__m512& v : acc) v = _mm512_setzero_ps();
  if (nb > 0) {
    const uint8_t* aq = a.row(t0) + q8_0_qs_offset;
    const float* da = a.d + t0 * a.nb;
    GLIA_AMX_BLOCK(0, 0, aq, a.stride, pair);
    for (int64_t b = 0; b < nb; b += 2) {
      // Block b is in set 0.
      if (b + 1 < nb) GLIA_AMX_BLOCK(1, b + 1, aq, a.stride, pair);
      _tile_stored(GLIA_AMX_SUMS0, sums[0], 64);
      if (b > 0) float_step<K>(acc, pair, b - 1, sums[1], da, a.nb);
      if (b + 1 == nb) break;
      // Block b + 1 is in set 1.
      if (b + 2 < nb) GLIA_AMX_BLOCK(0, b + 2, aq, a.stride, pair);
      _tile_stored(GLIA_AMX_SUMS1, sums[1], 64);
      float_step<K>(acc, pair, b, sums[0], da, a.nb);
    }
    float_step<K>(acc, pair, nb - 1, sums[(nb - 1) % 2], da, a.nb);
  }
  store_tile_rows(acc, y, ys, n_rows);
}
#undef GLIA_AMX_BLOCK

// mm_kernel::gemm (amx_gemm).
template <class K, decode_form Decode>
void gemm_amx(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, const act_rows& a, int64_t t0,
              int64_t n_tok, float* y, size_t ys, int last_rows) {
  amx_gemm<K, Decode>(panels, panel_bytes, n_panels, nb, a, t0, n_tok, y, ys, last_rows,
                      [&](const uint8_t* pair, int64_t t, float* yt, int rows) {
                        amx_pair<K>(pair, nb, a, t0 + t, yt, ys, rows);
                      });
}

}  // namespace

std::span<const mm_kernel> avx512amx_mm_legacy(bool q4_0_decode_pairs, bool amd_form) {
  // Q8_0 decodes single panels in every form (legacy_kernels).
  const auto make = [](auto form) {
    return amx_table(legacy_kernels<form()>, {{dtype::q8_0, gemm_amx<q8_0_amx, single_form(form())>},
                                              {dtype::q4_0, gemm_amx<q4_0_amx, form()>}});
  };
  if (amd_form) return amx_tables<single_panels, panel_pairs>(q4_0_decode_pairs, make);
  return amx_tables<single_spread, pairs_spread>(q4_0_decode_pairs, make);
}

}  // namespace glia::cpu
