// What the AMX kernels (mm_*_amx.cpp, compiled with AMX-TILE and AMX-INT8) share: the one tile
// configuration of all of them, so that each thread loads a configuration once and kernels of
// different types can follow each other, and the tokens of a tile. Internal linkage (see
// simd_avx2.h): only files compiled for AMX include this.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace glia::cpu {
namespace {

constexpr int amx_tokens = 16;  // tokens per A tile (its rows), and so per C tile

// Tile registers and their shapes (rows x bytes per row). Macros, not constants: GCC's tile
// intrinsics paste their tile argument into the instruction text, so it must expand to a literal.
#define GLIA_AMX_SUMS 0       // C, 16 tokens x 16 int32: blocks of 32 elements (Q8_0, Q4_0)
#define GLIA_AMX_ACTS32 1     // A, 16 tokens x 32 bytes: one block of activation quants
#define GLIA_AMX_PAIR32 2     // B, 8 x 64 bytes: 32 elements of 16 weight rows, 4 bytes per row a tile row
#define GLIA_AMX_SUMS_LO 3    // C, 16 x 16 int32 (k-quants: the low part of the scaled codes)
#define GLIA_AMX_PAIR64_LO 4  // B, 16 x 64 bytes: 64 elements of 16 weight rows
#define GLIA_AMX_ACTS64 5     // A, 16 tokens x 64 bytes
#define GLIA_AMX_PAIR64_HI 6  // B, 16 x 64 bytes
#define GLIA_AMX_SUMS_HI 7    // C, 16 x 16 int32 (the high part)

struct alignas(64) tile_config {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 32, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 8, 16, 16, 16, 16, 16};
};

// The configuration is per thread, and only the AMX kernels load one.
inline void configure_tiles() {
  thread_local bool configured = false;
  if (configured) return;
  static const tile_config config;
  _tile_loadconfig(&config);
  configured = true;
}

}  // namespace
}  // namespace glia::cpu
