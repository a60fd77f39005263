// Block layouts of the GGUF / ggml quantized types, byte for byte as they appear in a file
// (ggml/src/ggml-common.h). Shared by the reference routines, the CPU kernels and (later) CUDA, so
// every layout lives in exactly one place. Scales marked "fp16" are IEEE half bits (core/fp16.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace glia::quant {

inline constexpr int qk_legacy = 32;  // elements per block of Q4_0..Q8_1 and IQ4_NL
inline constexpr int qk_k = 256;      // elements per super-block of the k-quants and IQ4_XS

// Q4_0: x = d * (q - 8), q in 0..15. Element j in the low nibble of qs[j], j+16 in the high one.
struct block_q4_0 {
  uint16_t d;                 // fp16 scale
  uint8_t qs[qk_legacy / 2];  // [16] nibbles
};
static_assert(sizeof(block_q4_0) == 18);

// Q4_1: x = d * q + m, q in 0..15; nibble order as Q4_0.
struct block_q4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum
  uint8_t qs[qk_legacy / 2];
};
static_assert(sizeof(block_q4_1) == 20);

// Q5_0: x = d * (q - 16), q in 0..31: low 4 bits as Q4_0, bit 4 of element j is bit j of qh
// (read as a little-endian uint32).
struct block_q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[qk_legacy / 2];
};
static_assert(sizeof(block_q5_0) == 22);

// Q5_1: x = d * q + m with the 5-bit q of Q5_0.
struct block_q5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[qk_legacy / 2];
};
static_assert(sizeof(block_q5_1) == 24);

// Q8_0: x = d * q.
struct block_q8_0 {
  uint16_t d;
  int8_t qs[qk_legacy];
};
static_assert(sizeof(block_q8_0) == 34);

// Q8_1 (activations of Q4_1/Q5_1 dot products): as Q8_0 plus s = d * sum(q) in fp16, which
// carries the weight minimum's contribution without a second pass over q.
struct block_q8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[qk_legacy];
};
static_assert(sizeof(block_q8_1) == 36);

// Q2_K: 16 groups of 16. scales[j] = (min code << 4) | scale code; x = d*sc*q - dmin*m, q in 0..3.
// Element 128*h + 32*s + l (s = 0..3, l = 0..31) sits in bits 2s..2s+1 of qs[32*h + l].
struct block_q2_k {
  uint8_t scales[qk_k / 16];
  uint8_t qs[qk_k / 4];
  uint16_t d;     // fp16 super-scale of the scale codes
  uint16_t dmin;  // fp16 super-scale of the min codes
};
static_assert(sizeof(block_q2_k) == 84);

// Q3_K: 16 groups of 16 with signed 6-bit scales (stored + 32, packed into 12 bytes);
// x = d * (sc - 32) * (q - 4), q in 0..7: low 2 bits in qs (as Q2_K), bit 2 in hmask: element
// 32*b + l has its high bit in bit b of hmask[l].
struct block_q3_k {
  uint8_t hmask[qk_k / 8];
  uint8_t qs[qk_k / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(block_q3_k) == 110);

// Q4_K: 8 groups of 32 with 6-bit scale and min codes packed in 12 bytes (get_scale_min);
// x = d*sc*q - dmin*m, q in 0..15. Element 64*h + l is the low nibble of qs[32*h + l], 64*h+32+l
// the high one.
struct block_q4_k {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_q4_k) == 144);

// Q5_K: Q4_K plus a fifth bit: element 64*h + l has it in bit 2h of qh[l], 64*h+32+l in bit 2h+1.
struct block_q5_k {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[qk_k / 8];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_q5_k) == 176);

// Q6_K: 16 groups of 16 with int8 scales; x = d * sc * (q - 32), q in 0..63. In each half of 128
// elements, element 32*s + l has its low nibble in ql[l + 32*(s%2)] (low half for s < 2) and its
// top 2 bits in bits 2s..2s+1 of qh[l].
struct block_q6_k {
  uint8_t ql[qk_k / 2];
  uint8_t qh[qk_k / 4];
  int8_t scales[qk_k / 16];
  uint16_t d;
};
static_assert(sizeof(block_q6_k) == 210);

// Q8_K (activations of k-quant dot products): float scale, and the sum of each 16 quants so the
// k-quant minimum terms cost one multiply per group.
struct block_q8_k {
  float d;
  int8_t qs[qk_k];
  int16_t bsums[qk_k / 16];
};
static_assert(sizeof(block_q8_k) == 292);

// IQ4_NL: x = d * kvalues_iq4nl[q], nibble order as Q4_0.
struct block_iq4_nl {
  uint16_t d;
  uint8_t qs[qk_legacy / 2];
};
static_assert(sizeof(block_iq4_nl) == 18);

// IQ4_XS: 8 groups of 32 with 6-bit signed scales (low nibble in scales_l, two high bits of group
// g in bits 2g..2g+1 of scales_h, stored + 32); x = d * (ls - 32) * kvalues_iq4nl[q].
struct block_iq4_xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[qk_k / 64];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_iq4_xs) == 136);

// The stored scale of group g of an IQ4_XS block (0..63; the scale is this less 32).
// (constexpr: the CUDA kernels, built with --expt-relaxed-constexpr, call it too)
constexpr int iq4_xs_scale(const block_iq4_xs& b, int g) {
  return ((b.scales_l[g / 2] >> (4 * (g % 2))) & 0x0F) | ((b.scales_h >> (2 * g)) & 3) << 4;
}

// The 16 non-uniform levels of IQ4_NL / IQ4_XS (denser near zero, where weights concentrate).
inline constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                             1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace glia::quant
