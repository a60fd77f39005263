// The CUDA backend's repacked layout of Q4_0 and Q8_0 matrices: the file interleaves 2-byte scales
// with the quants (18- and 34-byte blocks, so no 16-byte load is aligned); split into two planes,
// a row of quants is 16-byte aligned and a lane reads a whole block's quants with one load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/op_types.h"

namespace glia::cuda {

// Device pointers into one allocation: quants [n_out][n_in / 32][quant_bytes], then fp16 scales
// [n_out][n_in / 32].
struct packed_matrix {
  dtype type = dtype::q4_0;
  int64_t n_in = 0, n_out = 0;
  const void* quants = nullptr;
  const void* scales = nullptr;
};

inline bool packable(const weight_view& w) {
  return (w.type == dtype::q4_0 || w.type == dtype::q8_0) && w.n_in % 32 == 0 && w.n_in > 0 && w.n_out > 0;
}

inline size_t packed_quant_bytes(dtype t) { return t == dtype::q4_0 ? 16 : 32; }

// Bytes before the scale plane (kept 16-byte aligned) and in all.
inline size_t packed_scales_offset(const weight_view& w) {
  const size_t q = size_t(w.n_out) * size_t(w.n_in / 32) * packed_quant_bytes(w.type);
  return (q + 15) / 16 * 16;
}
inline size_t packed_bytes(const weight_view& w) {
  return packed_scales_offset(w) + size_t(w.n_out) * size_t(w.n_in / 32) * sizeof(uint16_t);
}

// Writes the packed form of host matrix w into dst (packed_bytes(w) bytes). Both block types
// start with their fp16 scale, then the quants.
inline void pack_on_host(const weight_view& w, uint8_t* dst) {
  const size_t qb = packed_quant_bytes(w.type), block = 2 + qb;
  const int64_t nb = w.n_in / 32;
  uint8_t* quants = dst;
  uint8_t* scales = dst + packed_scales_offset(w);
  for (int64_t r = 0; r < w.n_out; ++r) {
    const uint8_t* row = w.row(r);
    for (int64_t b = 0; b < nb; ++b) {
      const size_t i = size_t(r * nb + b);
      std::memcpy(scales + i * 2, row + size_t(b) * block, 2);
      std::memcpy(quants + i * qb, row + size_t(b) * block + 2, qb);
    }
  }
}

}  // namespace glia::cuda
