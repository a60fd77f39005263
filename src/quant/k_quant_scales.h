// The packed scale and min codes of Q4_K and Q5_K blocks and the group scales of Q3_K blocks, read
// by the reference routines and by the kernels compiled with the base instruction set (not by the
// x86 ISA files: see cpu_kernels.h).
#pragma once
#include <cstdint>

#include "quant/block_types.h"

namespace glia::quant {

// The 8 scale codes and 8 min codes (6 bits each) of Q4_K/Q5_K, packed in 12 bytes: groups 0..3
// use the low 6 bits of bytes 0..3 (scale) and 4..7 (min); groups 4..7 keep their low nibbles in
// bytes 8..11 and their top two bits in the spare top bits of bytes 0..7.
struct scale_min {
  int scale, min;
};

inline scale_min get_scale_min(const uint8_t* q, int g) {
  if (g < 4) return {q[g] & 63, q[g + 4] & 63};
  return {(q[g + 4] & 0x0F) | (q[g - 4] >> 6) << 4, (q[g + 4] >> 4) | (q[g] >> 6) << 4};
}

// The min codes' part of a Q4_K/Q5_K dot with Q8_K activations: sum_g min_g * sum(a in g), with
// Q8_K's sums of 16 (two per group of 32).
inline int q8_k_min_term(const block_q8_k& y, const uint8_t* scales) {
  int sum = 0;
  for (int j = 0; j < qk_k / 16; ++j) sum += y.bsums[j] * get_scale_min(scales, j / 2).min;
  return sum;
}

// Q3_K group scale g (0..63, stored + 32): low nibble in scales[g % 8] (high nibble for g >= 8),
// top two bits in bits 2*(g/4)..+1 of scales[8 + g%4].
inline int q3_k_scale(const uint8_t* scales, int g) {
  const int lo = g < 8 ? scales[g] & 0x0F : scales[g - 8] >> 4;
  const int hi = (scales[8 + g % 4] >> (2 * (g / 4))) & 3;
  return lo | hi << 4;
}

}  // namespace glia::quant
