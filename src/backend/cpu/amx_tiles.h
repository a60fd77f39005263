// What the AMX kernels (mm_*_amx.cpp, compiled with AMX-TILE and AMX-INT8) share: the tile
// configuration type and its loading (each file's kernels have their own tile shapes), the tokens
// of a tile, the staging of panel pairs and the gemm over tiles. Internal linkage (see
// simd_avx2.h): only files compiled for AMX include this.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"

namespace glia::cpu {
namespace {

constexpr int amx_tokens = 16;  // tokens per A tile (its rows), and so per C tile

// Tile registers and their shapes (rows x bytes per row) are each kernel family's own: a tile
// configuration (tile_config) per family, loaded by a thread when it runs a kernel of another family
// than the last (a few dozen cycles against the millions of a gemm call). Tile registers are named
// by macros, not constants: GCC's tile intrinsics paste their tile argument into the instruction
// text, so it must expand to a literal.
struct alignas(64) tile_config {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loads `config` on this thread unless it is the one loaded last (configs are static objects; the
// thread's last one is kept outside this header, which every AMX file compiles on its own). Only
// this function may load a configuration or release the tiles: one that did otherwise would leave
// the slot stale, and the kernels would run on the wrong tile shapes without a fault.
inline void configure_tiles(const tile_config& config) {
  const void*& loaded = amx_tiles_of_thread();
  if (loaded == &config) return;
  _tile_loadconfig(&config);
  loaded = &config;
}

// y[t * ys + i] = acc[t] lane i, for the 16 tokens of a tile and the first n_rows rows of a pair.
inline void store_tile_rows(const __m512 acc[amx_tokens], float* y, size_t ys, int n_rows) {
  const __mmask16 keep = __mmask16((1u << n_rows) - 1);
#pragma GCC unroll 16
  for (int t = 0; t < amx_tokens; ++t) _mm512_mask_storeu_ps(y + size_t(t) * ys, keep, acc[t]);
}

// The n_panels panels (panel_bytes apart, nb blocks of K::packed bytes each) staged in pairs for
// the B tiles, K::pair_bytes per pair and block: K::stage(panel block, half, out) writes one
// panel's block into its half (0: first, 1: second) of a pair block; a last odd panel is paired
// with zeros.
template <class K>
void stage_pairs(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, uint8_t* out) {
  alignas(64) static const uint8_t zeros[K::packed] = {};
  for (int64_t p = 0; p < n_panels; p += 2) {
    const uint8_t* first = panels + size_t(p) * panel_bytes;
    const uint8_t* second = p + 1 < n_panels ? first + panel_bytes : nullptr;
    for (int64_t b = 0; b < nb; ++b, out += K::pair_bytes) {
      K::stage(first + size_t(b) * K::packed, 0, out);
      K::stage(second ? second + size_t(b) * K::packed : zeros, 1, out);
    }
  }
}

// A gemm call (mm_kernel::gemm) of an AMX kernel K for tokens t0.. t0 + n_tok: the call's panels
// are staged once (stage_pairs<K>) into per-thread scratch; pair(staged pair, first token relative
// to t0, y of that token and the pair's first row, rows of the pair) runs each whole tile of 16
// tokens against each pair; the tokens after the whole tiles take the VNNI tile K::tile (Decode:
// its panel reading for 1-3 tokens). Matmul hands these kernels all of a prefill's tokens at once.
// K::tiles is the tile configuration pair() uses.
template <class K, decode_form Decode, class Pair>
void amx_gemm(const uint8_t* panels, size_t panel_bytes, int64_t n_panels, int64_t nb, const act_rows& a, int64_t t0,
              int64_t n_tok, float* y, size_t ys, int last_rows, Pair pair) {
  const int64_t n_amx = n_tok / amx_tokens * amx_tokens;
  if (n_amx > 0) {
    configure_tiles(K::tiles);
    const int64_t n_pairs = (n_panels + 1) / 2;
    thread_local aligned_buffer staging;
    uint8_t* staged = staging.get(size_t(n_pairs * nb) * K::pair_bytes);
    stage_pairs<K>(panels, panel_bytes, n_panels, nb, staged);
    // GCC's tile loads are asm statements that do not say they read memory: keep the staging
    // stores before them.
    asm volatile("" ::: "memory");
    for (int64_t t = 0; t < n_amx; t += amx_tokens)
      for (int64_t q = 0; q < n_pairs; ++q) {
        const int rows = q + 1 < n_pairs ? 16 : n_panels % 2 ? last_rows : 8 + last_rows;
        pair(staged + size_t(q * nb) * K::pair_bytes, t, y + size_t(t) * ys + 16 * q, rows);
      }
  }
  if (n_amx < n_tok)
    gemm_panels<K::template tile, Decode>(panels, panel_bytes, n_panels, nb, a, t0 + n_amx, n_tok - n_amx,
                                          y + size_t(n_amx) * ys, ys, last_rows);
}

// The entries of a VNNI table for the types of `gemms`, each with its AMX gemm (the rest of the
// kernel, panels, decode and dot, as it is).
using gemm_fn = decltype(mm_kernel::gemm);
template <size_t N>
std::array<mm_kernel, N> amx_table(std::span<const mm_kernel> vnni, const std::pair<dtype, gemm_fn> (&gemms)[N]) {
  std::array<mm_kernel, N> out{};
  for (size_t i = 0; i < N; ++i)
    for (const mm_kernel& k : vnni)
      if (k.type == gemms[i].first) {
        out[i] = k;
        out[i].gemm = gemms[i].second;
        out[i].tile_tokens = amx_tokens;
      }
  return out;
}

// The tables of two decode forms (decode_form): make(form) builds one, form an integral_constant.
template <decode_form First, decode_form Second, class Make>
std::span<const mm_kernel> amx_tables(bool second, Make make) {
  static const auto first_table = make(std::integral_constant<decode_form, First>{});
  static const auto second_table = make(std::integral_constant<decode_form, Second>{});
  return second ? std::span<const mm_kernel>(second_table) : std::span<const mm_kernel>(first_table);
}

}  // namespace
}  // namespace glia::cpu
