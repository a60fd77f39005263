#if defined(__CUDACC__)
#define GLIA_HD __host__ __device__ __forceinline__
#else
#define GLIA_HD inline
#endif

// Decoding of GGUF weight blocks and the activation round trips, shared by host and device code.
// Every result is bit-identical to the type table's scalar reference (src/quant) on the host and on
// the device: the device side uses the _rn intrinsics so nvcc cannot fuse a multiply and an add
// into an FMA (which rounds once and would change the low bits), and fp16 conversions are integer
// code so they do not depend on the FPU's denormal mode. Assumes nvcc's default -ftz=false.
#pragma once

#include <cstdint>

#include "quant/block_types.h"
#include "quant/types.h"

#if defined(__CUDA_ARCH__)
#define GLIA_UNROLL _Pragma("unroll")
#else
#define GLIA_UNROLL
#endif

namespace glia::cuda {
namespace detail {

GLIA_HD uint32_t f2u(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(uint32_t, f);
#endif
}

GLIA_HD float u2f(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

#if defined(__CUDA_ARCH__)
GLIA_HD float mul(float a, float b) { return __fmul_rn(a, b); }
GLIA_HD float add(float a, float b) { return __fadd_rn(a, b); }
GLIA_HD float sub(float a, float b) { return __fsub_rn(a, b); }
GLIA_HD float div(float a, float b) { return __fdiv_rn(a, b); }  // exact even under -prec-div=false
// std::nearbyint as the x86 quantizer uses it: ties to even.
GLIA_HD float round_even(float v) { return rintf(v); }
#else
// The table's routines are built with -std=c++20 (no GNU extensions), so GCC does not contract these.
GLIA_HD float mul(float a, float b) { return a * b; }
GLIA_HD float add(float a, float b) { return a + b; }
GLIA_HD float sub(float a, float b) { return a - b; }
GLIA_HD float div(float a, float b) { return a / b; }
GLIA_HD float round_even(float v) { return __builtin_nearbyintf(v); }
#endif

GLIA_HD float abs(float v) { return u2f(f2u(v) & 0x7FFFFFFFu); }

// quant::nearest_int (the 1.5 * 2^23 trick) operation for operation, so out-of-range and NaN inputs
// give the same garbage on the host. On the device a NaN propagates as the canonical NaN, so only
// NaN inputs can differ there.
GLIA_HD int nearest_int(float x) { return int(f2u(add(x, 12582912.0f)) & 0x007FFFFFu) - 0x00400000; }

// kvalues_iq4nl packed one byte per level, little end first: device code cannot index a host array.
inline constexpr uint64_t iq4_lo = 0xF6EADDCFBFAD9881ull;  // levels 0..7
inline constexpr uint64_t iq4_hi = 0x7159453526190D01ull;  // levels 8..15
GLIA_HD int iq4_level(int q) { return int8_t(uint8_t(((q & 8) ? iq4_hi : iq4_lo) >> (8 * (q & 7)))); }

constexpr bool iq4_packing_matches() {
  for (int q = 0; q < 16; ++q)
    if (int8_t(uint8_t(((q & 8) ? iq4_hi : iq4_lo) >> (8 * (q & 7)))) != quant::kvalues_iq4nl[q]) return false;
  return true;
}
static_assert(iq4_packing_matches());

}  // namespace detail

// ---------------------------------------------------------------- fp16 / bf16

// Same bits as core/fp16.h fp16_to_f32, including the quieting of signalling NaNs that its x86
// float multiply performs.
GLIA_HD float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F)
    bits = 0x7F800000u | man << 13 | (man ? 0x00400000u : 0u);
  else if (exp != 0)
    bits = (exp + 112u) << 23 | man << 13;
  else
    bits = detail::f2u(float(int(man)) * 0x1p-24f);  // subnormal: exact, and a normal float
  return detail::u2f(sign | bits);
}

GLIA_HD float bf16_to_float(uint16_t b) { return detail::u2f(uint32_t(b) << 16); }

// Round to nearest even; NaN becomes the quiet NaN 0x7E00 (with its sign), as core/fp16.h does.
GLIA_HD uint16_t float_to_half(float f) {
  const uint32_t u = detail::f2u(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return uint16_t(sign | 0x7E00u);
  if (a >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // from 65520 (the tie above 65504) up
  if (a >= 0x38800000u) {                                  // normal half (>= 2^-14)
    const uint32_t m = a - 0x38000000u;                    // rebias the exponent by 127 - 15
    return uint16_t(sign | (m + 0x0FFFu + ((m >> 13) & 1u)) >> 13);
  }
  // Subnormal half: 0.5 has an ulp of 2^-24, one half step, so the float adder rounds to even for
  // us. Float denormals end at 0 either way, so a flush-to-zero adder gives the same bits.
  return uint16_t(sign | (detail::f2u(detail::add(detail::u2f(a), 0.5f)) - 0x3F000000u));
}

// As quant's f32_to_bf16 (the BF16 row quantizer): round to nearest even, NaN kept NaN by setting
// a mantissa bit the truncation keeps.
GLIA_HD uint16_t float_to_bf16(float f) {
  const uint32_t u = detail::f2u(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 64u);
  return uint16_t((u + (0x7FFFu + ((u >> 16) & 1u))) >> 16);
}

GLIA_HD float round_trip_f16(float f) { return half_to_float(float_to_half(f)); }
GLIA_HD float round_trip_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

// ---------------------------------------------------------------- weight decoders
// Each writes elements [32g, 32g + 32) of a row to out[0..32). Operand order follows the scalar
// reference exactly: x86 propagates the first NaN operand, so even garbage blocks decode the same.

GLIA_HD void decode32_f32(const uint8_t* row, int64_t g, float* out) {
  const float* x = reinterpret_cast<const float*>(row) + 32 * g;
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) out[j] = x[j];
}

GLIA_HD void decode32_f16(const uint8_t* row, int64_t g, float* out) {
  const uint16_t* x = reinterpret_cast<const uint16_t*>(row) + 32 * g;
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) out[j] = half_to_float(x[j]);
}

GLIA_HD void decode32_bf16(const uint8_t* row, int64_t g, float* out) {
  const uint16_t* x = reinterpret_cast<const uint16_t*>(row) + 32 * g;
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) out[j] = bf16_to_float(x[j]);
}

GLIA_HD void decode32_q4_0(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q4_0& b = reinterpret_cast<const quant::block_q4_0*>(row)[g];
  const float d = half_to_float(b.d);
  GLIA_UNROLL
  for (int j = 0; j < 16; ++j) {
    out[j] = detail::mul(float((b.qs[j] & 0x0F) - 8), d);
    out[j + 16] = detail::mul(float((b.qs[j] >> 4) - 8), d);
  }
}

GLIA_HD void decode32_q4_1(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q4_1& b = reinterpret_cast<const quant::block_q4_1*>(row)[g];
  const float d = half_to_float(b.d), m = half_to_float(b.m);
  GLIA_UNROLL
  for (int j = 0; j < 16; ++j) {
    out[j] = detail::add(detail::mul(float(b.qs[j] & 0x0F), d), m);
    out[j + 16] = detail::add(detail::mul(float(b.qs[j] >> 4), d), m);
  }
}

// Q5 high bits as the little-endian word the reference reads (qh is only byte aligned).
GLIA_HD uint32_t load_qh(const uint8_t* qh) {
  return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

GLIA_HD void decode32_q5_0(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q5_0& b = reinterpret_cast<const quant::block_q5_0*>(row)[g];
  const float d = half_to_float(b.d);
  const uint32_t qh = load_qh(b.qh);
  GLIA_UNROLL
  for (int j = 0; j < 16; ++j) {
    const int lo = (b.qs[j] & 0x0F) | int((qh >> j) & 1u) << 4;
    const int hi = (b.qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
    out[j] = detail::mul(float(lo - 16), d);
    out[j + 16] = detail::mul(float(hi - 16), d);
  }
}

GLIA_HD void decode32_q5_1(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q5_1& b = reinterpret_cast<const quant::block_q5_1*>(row)[g];
  const float d = half_to_float(b.d), m = half_to_float(b.m);
  const uint32_t qh = load_qh(b.qh);
  GLIA_UNROLL
  for (int j = 0; j < 16; ++j) {
    const int lo = (b.qs[j] & 0x0F) | int((qh >> j) & 1u) << 4;
    const int hi = (b.qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
    out[j] = detail::add(detail::mul(float(lo), d), m);
    out[j + 16] = detail::add(detail::mul(float(hi), d), m);
  }
}

GLIA_HD void decode32_q8_0(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q8_0& b = reinterpret_cast<const quant::block_q8_0*>(row)[g];
  const float d = half_to_float(b.d);
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) out[j] = detail::mul(float(b.qs[j]), d);
}

GLIA_HD void decode32_q8_1(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q8_1& b = reinterpret_cast<const quant::block_q8_1*>(row)[g];
  const float d = half_to_float(b.d);
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) out[j] = detail::mul(float(b.qs[j]), d);
}

GLIA_HD void decode32_iq4_nl(const uint8_t* row, int64_t g, float* out) {
  const quant::block_iq4_nl& b = reinterpret_cast<const quant::block_iq4_nl*>(row)[g];
  const float d = half_to_float(b.d);
  GLIA_UNROLL
  for (int j = 0; j < 16; ++j) {
    out[j] = detail::mul(d, float(detail::iq4_level(b.qs[j] & 0x0F)));
    out[j + 16] = detail::mul(d, float(detail::iq4_level(b.qs[j] >> 4)));
  }
}

// 256-element types: g / 8 is the super-block, p = g % 8 the piece of 32 (elements 32p + l).

// Piece p = 4h + s is bit pair s of qs[32h + l]; its two groups of 16 are 2p and 2p + 1.
GLIA_HD void decode32_q2_k(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q2_k& b = reinterpret_cast<const quant::block_q2_k*>(row)[g >> 3];
  const int p = int(g & 7);
  const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
  const uint8_t* qs = b.qs + 32 * (p >> 2);
  const int shift = 2 * (p & 3);
  GLIA_UNROLL
  for (int hg = 0; hg < 2; ++hg) {
    const uint8_t sc = b.scales[2 * p + hg];
    const float dl = detail::mul(d, float(sc & 0x0F));
    const float ml = detail::mul(dmin, float(sc >> 4));
    GLIA_UNROLL
    for (int l = 16 * hg; l < 16 * hg + 16; ++l)
      out[l] = detail::sub(detail::mul(dl, float((qs[l] >> shift) & 3)), ml);
  }
}

// Q3_K scale code of group sg (0..15), stored + 32.
GLIA_HD int q3_k_scale(const uint8_t* scales, int sg) {
  const int lo = (scales[sg & 7] >> (4 * (sg >> 3))) & 0x0F;
  const int hi = (scales[8 + (sg & 3)] >> (2 * (sg >> 2))) & 3;
  return lo | hi << 4;
}

GLIA_HD void decode32_q3_k(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q3_k& b = reinterpret_cast<const quant::block_q3_k*>(row)[g >> 3];
  const int p = int(g & 7);
  const float d_all = half_to_float(b.d);
  const uint8_t* qs = b.qs + 32 * (p >> 2);
  const int shift = 2 * (p & 3);
  GLIA_UNROLL
  for (int hg = 0; hg < 2; ++hg) {
    const float dl = detail::mul(d_all, float(q3_k_scale(b.scales, 2 * p + hg) - 32));
    GLIA_UNROLL
    for (int l = 16 * hg; l < 16 * hg + 16; ++l) {
      // A clear hmask bit means the stored 3-bit value was below 4: subtract the offset.
      const int v = ((qs[l] >> shift) & 3) - (((b.hmask[l] >> p) & 1) ? 0 : 4);
      out[l] = detail::mul(dl, float(v));
    }
  }
}

// Q4_K/Q5_K scale and min codes of group p (6 bits each, see get_scale_min in src/quant).
GLIA_HD void q4_k_scale_min(const uint8_t* q, int p, int* sc, int* m) {
  if (p < 4) {
    *sc = q[p] & 63;
    *m = q[p + 4] & 63;
  } else {
    *sc = (q[p + 4] & 0x0F) | (q[p - 4] >> 6) << 4;
    *m = (q[p + 4] >> 4) | (q[p] >> 6) << 4;
  }
}

// Piece p's multiplier and offset, d * scale code and dmin * min code (Q4_K and Q5_K).
GLIA_HD void q4_k_piece_scales(uint16_t d, uint16_t dmin, const uint8_t* scales, int p, float* dl, float* ml) {
  int sc, m;
  q4_k_scale_min(scales, p, &sc, &m);
  *dl = detail::mul(half_to_float(d), float(sc));
  *ml = detail::mul(half_to_float(dmin), float(m));
}

// Piece p = 2h + k is nibble k of qs[32h + l]; it is also Q5_K's group and high-bit index.
GLIA_HD void decode32_q4_k(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q4_k& b = reinterpret_cast<const quant::block_q4_k*>(row)[g >> 3];
  const int p = int(g & 7);
  float dl, ml;
  q4_k_piece_scales(b.d, b.dmin, b.scales, p, &dl, &ml);
  const uint8_t* qs = b.qs + 32 * (p >> 1);
  const int shift = 4 * (p & 1);
#if defined(__CUDA_ARCH__)
  // Two 16-byte loads instead of 32 byte loads where the block is aligned (rows of a device copy).
  if ((reinterpret_cast<uintptr_t>(qs) & 15) == 0) {
    union {
      uint4 v[2];
      uint8_t b[32];
    } u;
    u.v[0] = reinterpret_cast<const uint4*>(qs)[0];
    u.v[1] = reinterpret_cast<const uint4*>(qs)[1];
    GLIA_UNROLL
    for (int l = 0; l < 32; ++l) out[l] = detail::sub(detail::mul(dl, float((u.b[l] >> shift) & 0x0F)), ml);
    return;
  }
#endif
  GLIA_UNROLL
  for (int l = 0; l < 32; ++l) out[l] = detail::sub(detail::mul(dl, float((qs[l] >> shift) & 0x0F)), ml);
}

GLIA_HD void decode32_q5_k(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q5_k& b = reinterpret_cast<const quant::block_q5_k*>(row)[g >> 3];
  const int p = int(g & 7);
  float dl, ml;
  q4_k_piece_scales(b.d, b.dmin, b.scales, p, &dl, &ml);
  const uint8_t* qs = b.qs + 32 * (p >> 1);
  const int shift = 4 * (p & 1);
  GLIA_UNROLL
  for (int l = 0; l < 32; ++l) {
    const int q = ((qs[l] >> shift) & 0x0F) | ((b.qh[l] >> p) & 1) << 4;
    out[l] = detail::sub(detail::mul(dl, float(q)), ml);
  }
}

// Piece p = 4h + s: low nibble from ql[64h + 32(s & 1) + l] (high nibble for s >= 2), top bits are
// bit pair s of qh[32h + l].
GLIA_HD void decode32_q6_k(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q6_k& b = reinterpret_cast<const quant::block_q6_k*>(row)[g >> 3];
  const int p = int(g & 7);
  const float d = half_to_float(b.d);
  const uint8_t* ql = b.ql + 64 * (p >> 2) + 32 * (p & 1);
  const uint8_t* qh = b.qh + 32 * (p >> 2);
  const int lo_shift = 4 * ((p >> 1) & 1), hi_shift = 2 * (p & 3);
#if defined(__CUDA_ARCH__)
  // 210-byte blocks keep only 2-byte alignment: 16 two-byte loads for each of ql and qh instead of
  // 32 byte loads.
  union {
    uint16_t h[16];
    uint8_t b[32];
  } lo, hi;
  GLIA_UNROLL
  for (int i = 0; i < 16; ++i) {
    lo.h[i] = reinterpret_cast<const uint16_t*>(ql)[i];
    hi.h[i] = reinterpret_cast<const uint16_t*>(qh)[i];
  }
  ql = lo.b;
  qh = hi.b;
#endif
  GLIA_UNROLL
  for (int hg = 0; hg < 2; ++hg) {
    const float dl = detail::mul(d, float(b.scales[2 * p + hg]));
    GLIA_UNROLL
    for (int l = 16 * hg; l < 16 * hg + 16; ++l) {
      const int q = ((ql[l] >> lo_shift) & 0x0F) | ((qh[l] >> hi_shift) & 3) << 4;
      out[l] = detail::mul(dl, float(q - 32));
    }
  }
}

GLIA_HD void decode32_q8_k(const uint8_t* row, int64_t g, float* out) {
  const quant::block_q8_k& b = reinterpret_cast<const quant::block_q8_k*>(row)[g >> 3];
  const int8_t* qs = b.qs + 32 * (g & 7);
  GLIA_UNROLL
  for (int l = 0; l < 32; ++l) out[l] = detail::mul(b.d, float(qs[l]));
}

GLIA_HD void decode32_iq4_xs(const uint8_t* row, int64_t g, float* out) {
  const quant::block_iq4_xs& b = reinterpret_cast<const quant::block_iq4_xs*>(row)[g >> 3];
  const int p = int(g & 7);
  const float dl = detail::mul(half_to_float(b.d), float(quant::iq4_xs_scale(b, p) - 32));
  const uint8_t* qs = b.qs + 16 * p;
  GLIA_UNROLL
  for (int j = 0; j < 16; ++j) {
    out[j] = detail::mul(dl, float(detail::iq4_level(qs[j] & 0x0F)));
    out[j + 16] = detail::mul(dl, float(detail::iq4_level(qs[j] >> 4)));
  }
}

// Whether decode32 handles t (decode1 handles only f32, f16 and bf16).
GLIA_HD bool can_decode32(dtype t) {
  switch (t) {
    case dtype::f32: case dtype::f16: case dtype::bf16: case dtype::q4_0: case dtype::q4_1:
    case dtype::q5_0: case dtype::q5_1: case dtype::q8_0: case dtype::q8_1: case dtype::q2_k:
    case dtype::q3_k: case dtype::q4_k: case dtype::q5_k: case dtype::q6_k: case dtype::q8_k:
    case dtype::iq4_nl: case dtype::iq4_xs:
      return true;
  }
  return false;
}

// Elements [32g, 32g + 32) of a row of type t as stored in a GGUF file. Other types leave out as is.
GLIA_HD void decode32(dtype t, const uint8_t* row, int64_t g, float* out) {
  switch (t) {
    case dtype::f32: decode32_f32(row, g, out); break;
    case dtype::f16: decode32_f16(row, g, out); break;
    case dtype::bf16: decode32_bf16(row, g, out); break;
    case dtype::q4_0: decode32_q4_0(row, g, out); break;
    case dtype::q4_1: decode32_q4_1(row, g, out); break;
    case dtype::q5_0: decode32_q5_0(row, g, out); break;
    case dtype::q5_1: decode32_q5_1(row, g, out); break;
    case dtype::q8_0: decode32_q8_0(row, g, out); break;
    case dtype::q8_1: decode32_q8_1(row, g, out); break;
    case dtype::q2_k: decode32_q2_k(row, g, out); break;
    case dtype::q3_k: decode32_q3_k(row, g, out); break;
    case dtype::q4_k: decode32_q4_k(row, g, out); break;
    case dtype::q5_k: decode32_q5_k(row, g, out); break;
    case dtype::q6_k: decode32_q6_k(row, g, out); break;
    case dtype::q8_k: decode32_q8_k(row, g, out); break;
    case dtype::iq4_nl: decode32_iq4_nl(row, g, out); break;
    case dtype::iq4_xs: decode32_iq4_xs(row, g, out); break;
  }
}

// Element i of a float-type row (for row tails shorter than 32); 0 for other types.
GLIA_HD float decode1(dtype t, const uint8_t* row, int64_t i) {
  switch (t) {
    case dtype::f32: return reinterpret_cast<const float*>(row)[i];
    case dtype::f16: return half_to_float(reinterpret_cast<const uint16_t*>(row)[i]);
    case dtype::bf16: return bf16_to_float(reinterpret_cast<const uint16_t*>(row)[i]);
    default: return 0.0f;
  }
}

// ---------------------------------------------------------------- activation round trips
// y = what quant::activation_quantizer(dot_type) stores, decoded: the activation exactly as the
// reference dot product sees it.

// x86 Q8_0: d = amax / 127 stored as fp16, codes nearbyint(x * 127 / amax) (ties to even).
// The Q8_0 block of x[0..32) as the x86 reference stores it: quants in q, the fp16 scale returned
// as float.
GLIA_HD float quantize_q8_0(const float* x, int8_t* q) {
  float amax = 0.0f;
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) {
    const float a = detail::abs(x[j]);
    amax = amax < a ? a : amax;  // std::max's order: a NaN never becomes amax
  }
  const float d = half_to_float(float_to_half(detail::div(amax, 127.0f)));
  const float id = amax != 0.0f ? detail::div(127.0f, amax) : 0.0f;
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) {
    const float v = detail::round_even(detail::mul(x[j], id));
    q[j] = int8_t(v >= -127.0f && v <= 127.0f ? int(v) : (v > 0.0f ? 127 : v < 0.0f ? -127 : 0));
  }
  return d;
}

GLIA_HD void round_trip_q8_0(const float* x, float* y) {
  int8_t q[32];
  const float d = quantize_q8_0(x, q);
  GLIA_UNROLL
  for (int j = 0; j < 32; ++j) y[j] = detail::mul(d, float(q[j]));
}

// Q8_1 differs from Q8_0 only by the stored sum s, which the decoded values do not use.
GLIA_HD void round_trip_q8_1(const float* x, float* y) { round_trip_q8_0(x, y); }

// Q8_K (quant/q8_k.cpp): the signed peak maps to -127, the float d = 1 / iscale is stored as is.
GLIA_HD void round_trip_q8_k(const float* x, float* y) {
  float amax = 0.0f, peak = 0.0f;
  for (int e = 0; e < 256; ++e) {
    const float a = detail::abs(x[e]);
    if (a > amax) {
      amax = a;
      peak = x[e];
    }
  }
  if (amax == 0.0f) {
    for (int e = 0; e < 256; ++e) y[e] = 0.0f;
    return;
  }
  const float iscale = detail::div(-127.0f, peak);
  const float d = detail::div(1.0f, iscale);
  for (int e = 0; e < 256; ++e) {
    const int q = detail::nearest_int(detail::mul(iscale, x[e]));
    y[e] = detail::mul(d, float(int8_t(q < 127 ? q : 127)));
  }
}

}  // namespace glia::cuda
