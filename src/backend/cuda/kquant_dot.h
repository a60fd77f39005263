// The integer parts of the Q2_K..Q6_K and IQ4_XS dot products against Q8_K activations, as the CUDA
// matmul's lanes form them (4-byte words and dp4a), and the float step that folds a block's sums
// into a float exactly as the type table's vec_dot does (the row's sum of those floats is added in
// the kernel's order, kernels_kquant.cu). Host and device share this code, so the
// host tests check it bit for bit against the reference: a block's parts, added as integers, give
// the reference's integer sums, hence the reference's float for that block.
//
// A Q4_K block (144 bytes) is cut into 4 quarters of 64 elements (sub-blocks 2q and 2q + 1: the low
// and high nibbles of qs[32q, 32q + 32)), as is a Q5_K block (176 bytes, fifth bits in qh); a Q6_K block (210 bytes) into 8 eighths of 32 elements
// (element 128h + 32s + l with h = e / 4, s = e % 4: low bits in ql, top two bits in qh), as are
// Q3_K (110 bytes) and Q2_K (84 bytes) blocks (2-bit codes in qs, Q3_K's third bits in hmask); an IQ4_XS
// block (136 bytes) into its 8 sub-blocks, each folded into the row's sum on its own (as the
// reference folds them).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cuda/block_decode.h"

namespace glia::cuda {

inline constexpr int q4_k_parts = 4, q6_k_parts = 8, iq4_xs_parts = 8, low_k_parts = 8;  // lanes per block

// A lane's share of a block: its part of sum_g scale_g * sum(q a) and (Q2_K, Q4_K, Q5_K) of the
// minimum term.
struct kq_part {
  int isum = 0;
  int min_term = 0;
};

struct words4 {
  uint32_t x, y, z, w;
};

// Loads from weight blocks and activation planes. The device reads each with the widest load its
// alignment allows (kquant_supported requires rows aligned to 16 bytes for Q4_K and Q5_K, 8 for
// IQ4_XS, 2 for the others).
#if defined(__CUDA_ARCH__)
// 16 bytes at a 16-byte aligned p.
__device__ __forceinline__ words4 load_words4(const void* p) {
  const uint4 v = *static_cast<const uint4*>(p);
  return {v.x, v.y, v.z, v.w};
}
// 16 bytes at an 8-byte aligned p (IQ4_XS blocks are 136 bytes long).
__device__ __forceinline__ words4 load_words4_a8(const void* p) {
  const uint2 a = static_cast<const uint2*>(p)[0], b = static_cast<const uint2*>(p)[1];
  return {a.x, a.y, b.x, b.y};
}
// 4 bytes at a 2-byte aligned p (Q6_K blocks are 210 bytes long, so only 2-byte aligned).
__device__ __forceinline__ uint32_t load_word_a2(const uint8_t* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return uint32_t(h[0]) | uint32_t(h[1]) << 16;
}
#else
// The host twins copy bytes, which works at any address, and count the addresses that the device
// load they stand for could not read: the host tests lay blocks and activations out as the device
// does and require none.
inline std::atomic<long> misaligned_loads{0};
template <class T>
T host_load(const void* p, uintptr_t device_alignment) {
  if (reinterpret_cast<uintptr_t>(p) % device_alignment) misaligned_loads.fetch_add(1, std::memory_order_relaxed);
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
inline words4 load_words4(const void* p) { return host_load<words4>(p, 16); }
inline words4 load_words4_a8(const void* p) { return host_load<words4>(p, 8); }
inline uint32_t load_word_a2(const uint8_t* p) { return host_load<uint32_t>(p, 2); }
#endif

// c + the dot product of the four signed bytes of a and b.
GLIA_HD int dp4a(uint32_t a, uint32_t b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(int(a), int(b), c);
#else
  for (int i = 0; i < 4; ++i) c += int(int8_t(uint8_t(a >> (8 * i)))) * int(int8_t(uint8_t(b >> (8 * i))));
  return c;
#endif
}

// CUDA's __byte_perm without its sign mode: byte i of the result is byte (s >> 4i) & 7 of the eight
// bytes x (0-3), y (4-7).
GLIA_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t xy = uint64_t(y) << 32 | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= uint32_t(uint8_t(xy >> (8 * ((s >> (4 * i)) & 7)))) << (8 * i);
  return r;
#endif
}

GLIA_HD int dp4a_words(words4 w, words4 a, int c) {
  c = dp4a(w.x, a.x, c);
  c = dp4a(w.y, a.y, c);
  c = dp4a(w.z, a.z, c);
  return dp4a(w.w, a.w, c);
}

GLIA_HD words4 nibbles(words4 v, int shift) {
  constexpr uint32_t m = 0x0F0F0F0Fu;
  return {(v.x >> shift) & m, (v.y >> shift) & m, (v.z >> shift) & m, (v.w >> shift) & m};
}

// The fifth bits of 4 words of Q5_K codes: bit `bit` of each byte of qh, moved to bit 4.
GLIA_HD words4 fifth_bits(words4 qh, int bit) {
  constexpr uint32_t m = 0x01010101u;
  return {((qh.x >> bit) & m) << 4, ((qh.y >> bit) & m) << 4, ((qh.z >> bit) & m) << 4, ((qh.w >> bit) & m) << 4};
}

GLIA_HD words4 operator|(words4 a, words4 b) { return {a.x | b.x, a.y | b.y, a.z | b.z, a.w | b.w}; }

// Quarter q of the Q4_K (Q5 false) or Q5_K block at blk (16-byte aligned) against a = the Q8_K
// quants of elements [64q, 64q + 64) (16-byte aligned) and bsums = the block's 16 sums of 16 quants.
// Q5_K adds to each code its fifth bit: bit 2q (low nibbles) or 2q + 1 (high) of qh[l].
template <bool Q5>
GLIA_HD kq_part k_quarter(const uint8_t* blk, int q, const int8_t* a, const int16_t* bsums) {
  using block = std::conditional_t<Q5, quant::block_q5_k, quant::block_q4_k>;
  const block& b = *reinterpret_cast<const block*>(blk);
  const uint8_t* qs = b.qs + 32 * q;
  int lo = 0, hi = 0;
  GLIA_UNROLL
  for (int h = 0; h < 2; ++h) {
    const words4 w = load_words4(qs + 16 * h);
    words4 c_lo = nibbles(w, 0), c_hi = nibbles(w, 4);
    if constexpr (Q5) {
      const words4 qh = load_words4(b.qh + 16 * h);
      c_lo = c_lo | fifth_bits(qh, 2 * q);
      c_hi = c_hi | fifth_bits(qh, 2 * q + 1);
    }
    lo = dp4a_words(c_lo, load_words4(a + 16 * h), lo);
    hi = dp4a_words(c_hi, load_words4(a + 32 + 16 * h), hi);
  }
  int sc0, m0, sc1, m1;
  q4_k_scale_min(b.scales, 2 * q, &sc0, &m0);
  q4_k_scale_min(b.scales, 2 * q + 1, &sc1, &m1);
  kq_part p;
  p.isum = sc0 * lo + sc1 * hi;
  p.min_term = m0 * (bsums[4 * q] + bsums[4 * q + 1]) + m1 * (bsums[4 * q + 2] + bsums[4 * q + 3]);
  return p;
}

// The two 16-element group sums of a part of 32 elements: dot[k] = sum over words i of elements
// 16k + 4i.. of code(16k + 4i) . a (code: the part's four codes at that byte offset, as a word).
template <class Code>
GLIA_HD void group_dots(const int8_t* a, int dot[2], Code code) {
  GLIA_UNROLL
  for (int half = 0; half < 2; ++half) {
    const words4 av = load_words4(a + 16 * half);
    const uint32_t aw[4] = {av.x, av.y, av.z, av.w};
    dot[half] = 0;
    GLIA_UNROLL
    for (int i = 0; i < 4; ++i) dot[half] = dp4a(code(16 * half + 4 * i), aw[i], dot[half]);
  }
}

// Eighth e of the Q6_K block at blk (2-byte aligned) against a = the Q8_K quants of elements
// [32e, 32e + 32) (16-byte aligned) and the block's bsums. Codes are q + 32 (0..63), so each group
// of 16 subtracts 32 times its activation sum.
GLIA_HD kq_part q6_k_eighth(const uint8_t* blk, int e, const int8_t* a, const int16_t* bsums) {
  const auto& b = *reinterpret_cast<const quant::block_q6_k*>(blk);
  const int h = e / 4, s = e % 4;
  const uint8_t* ql = b.ql + 64 * h + 32 * (s % 2);
  const uint8_t* qh = b.qh + 32 * h;
  const int lo_shift = s < 2 ? 0 : 4, hi_shift = 2 * s;
  int dot[2];
  group_dots(a, dot, [&](int off) {
    return ((load_word_a2(ql + off) >> lo_shift) & 0x0F0F0F0Fu) | ((load_word_a2(qh + off) >> hi_shift) & 0x03030303u) << 4;
  });
  const int g = 8 * h + 2 * s;
  kq_part p;
  p.isum = b.scales[g] * (dot[0] - 32 * bsums[g]) + b.scales[g + 1] * (dot[1] - 32 * bsums[g + 1]);
  return p;
}

// Eighth e of a Q2_K (Q3 false) or Q3_K block (2-byte aligned): the 2-bit codes of elements 32e +
// l (bits 2s..2s+1 of qs[32h + l], h = e / 4, s = e % 4), with Q3_K's third bit (bit e of
// hmask[l]), against a = their Q8_K quants (16-byte aligned) and the block's bsums. Q3_K codes
// enter as q + 4 (0..7) and the offset leaves through the group sums; Q2_K's minimums give the min
// term.
template <bool Q3>
GLIA_HD kq_part low_k_eighth(const uint8_t* blk, int e, const int8_t* a, const int16_t* bsums) {
  using block = std::conditional_t<Q3, quant::block_q3_k, quant::block_q2_k>;
  const block& b = *reinterpret_cast<const block*>(blk);
  const int h = e / 4, s = e % 4;
  const uint8_t* qs = b.qs + 32 * h;
  int dot[2];
  group_dots(a, dot, [&](int off) {
    uint32_t code = (load_word_a2(qs + off) >> (2 * s)) & 0x03030303u;
    if constexpr (Q3) code |= ((load_word_a2(b.hmask + off) >> e) & 0x01010101u) << 2;
    return code;
  });
  const int g = 8 * h + 2 * s;
  kq_part p;
  if constexpr (Q3) {
    p.isum = (q3_k_scale(b.scales, g) - 32) * (dot[0] - 4 * bsums[g]) +
             (q3_k_scale(b.scales, g + 1) - 32) * (dot[1] - 4 * bsums[g + 1]);
  } else {
    p.isum = (b.scales[g] & 0x0F) * dot[0] + (b.scales[g + 1] & 0x0F) * dot[1];
    p.min_term = (b.scales[g] >> 4) * bsums[g] + (b.scales[g + 1] >> 4) * bsums[g + 1];
  }
  return p;
}

// The IQ4 levels (int8) of the four indices 0..15 held in the bytes of x: two 8-entry byte
// permutations of the level table, the index's bit 3 choosing between them.
GLIA_HD uint32_t iq4_levels(uint32_t x) {
  constexpr uint32_t t0 = uint32_t(detail::iq4_lo), t1 = uint32_t(detail::iq4_lo >> 32);
  constexpr uint32_t t2 = uint32_t(detail::iq4_hi), t3 = uint32_t(detail::iq4_hi >> 32);
  const uint32_t sel = (x & 0x7u) | ((x >> 4) & 0x70u) | ((x >> 8) & 0x700u) | ((x >> 12) & 0x7000u);
  const uint32_t upper = ((x >> 3) & 0x01010101u) * 0xFFu;  // 0xFF in the bytes whose index is >= 8
  return (byte_perm(t0, t1, sel) & ~upper) | (byte_perm(t2, t3, sel) & upper);
}

GLIA_HD words4 iq4_levels(words4 v) { return {iq4_levels(v.x), iq4_levels(v.y), iq4_levels(v.z), iq4_levels(v.w)}; }

// Sub-block g (32 elements) of the IQ4_XS block at blk (8-byte aligned) against a = the Q8_K quants
// of elements [32g, 32g + 32) (16-byte aligned), folded as vec_dot_iq4_xs_q8_k folds a sub-block:
// ((d * da) * (ls_g - 32)) * sumi_g (the reference adds one such term per sub-block).
GLIA_HD float iq4_xs_sub_block(const uint8_t* blk, int g, const int8_t* a, float da) {
  const auto& b = *reinterpret_cast<const quant::block_iq4_xs*>(blk);
  const words4 w = load_words4_a8(b.qs + 16 * g);
  int sumi = dp4a_words(iq4_levels(nibbles(w, 0)), load_words4(a), 0);
  sumi = dp4a_words(iq4_levels(nibbles(w, 4)), load_words4(a + 16), sumi);
  const float d4d8 = detail::mul(half_to_float(b.d), da);
  return detail::mul(detail::mul(d4d8, float(quant::iq4_xs_scale(b, g) - 32)), float(sumi));
}

// The block struct of each k-quant, and whether it has minimums (a dmin and a min term).
template <dtype T>
using k_block = std::conditional_t<
    T == dtype::q2_k, quant::block_q2_k,
    std::conditional_t<T == dtype::q3_k, quant::block_q3_k,
                       std::conditional_t<T == dtype::q4_k, quant::block_q4_k,
                                          std::conditional_t<T == dtype::q5_k, quant::block_q5_k, quant::block_q6_k>>>>;
template <dtype T>
inline constexpr bool k_has_min = T == dtype::q2_k || T == dtype::q4_k || T == dtype::q5_k;

// A whole block's sums folded into its float value as the type table's vec_dot folds a block (da:
// the activation block's scale): (d * da) * isum, less (dmin * da) * min_term for the types with
// minimums (Q2_K's reference multiplies da * d: the same product).
template <dtype T>
GLIA_HD float k_block_value(const uint8_t* blk, float da, int isum, int min_term) {
  const k_block<T>& b = *reinterpret_cast<const k_block<T>*>(blk);
  const float d = detail::mul(half_to_float(b.d), da);
  if constexpr (!k_has_min<T>) {
    return detail::mul(d, float(isum));
  } else {
    const float dmin = detail::mul(half_to_float(b.dmin), da);
    return detail::sub(detail::mul(d, float(isum)), detail::mul(dmin, float(min_term)));
  }
}

}  // namespace glia::cuda
