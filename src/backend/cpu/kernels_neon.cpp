// NEON dot products for 64-bit ARM: every quantized weight type against its 8-bit activations
// (Q8_0, Q8_1 or Q8_K), and the float types (F32, F16, BF16) against activations of their own
// type. NEON is part of AArch64's base instruction set, so this file needs no flags and no run-time
// check (CMakeLists.txt builds it on aarch64 only). Only ARMv8.0 instructions: widening multiplies
// and pairwise adds, not the dot-product extension of ARMv8.2, which not every 64-bit ARM core has.
//
// Each dot has its reference's results bit for bit: the integer sums are exact in any order, and the
// float steps are the reference's, in its order. Matmuls tile these dots (there are no weight panels
// for ARM yet).
#include "backend/cpu/simd_neon.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backend/cpu/cpu_kernels.h"
#include "core/fp16.h"
#include "quant/block_types.h"
#include "quant/k_quant_scales.h"
#include "quant/types.h"

namespace glia::cpu {
namespace {

using quant::block_iq4_nl;
using quant::block_iq4_xs;
using quant::block_q2_k;
using quant::block_q3_k;
using quant::block_q4_0;
using quant::block_q4_1;
using quant::block_q4_k;
using quant::block_q5_0;
using quant::block_q5_1;
using quant::block_q5_k;
using quant::block_q6_k;
using quant::block_q8_0;
using quant::block_q8_1;
using quant::block_q8_k;
using quant::qk_k;
using quant::qk_legacy;

// acc + the 16 products a[i] * b[i], two to an int32 lane (each product fits int16: |a|, |b| <= 128).
int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  return vpadalq_s16(acc, vmull_high_s8(a, b));
}

// The sum of the 16 products of a and the bytes at b.
int dot16_at(int8x16_t a, const int8_t* b) { return vaddvq_s32(dot16(vdupq_n_s32(0), a, vld1q_s8(b))); }

// The sum of the 32 products of two runs of 32 bytes, as 16 + 16.
int dot32(int8x16_t a0, int8x16_t a1, const int8_t* b) {
  return vaddvq_s32(dot16(dot16(vdupq_n_s32(0), a0, vld1q_s8(b)), a1, vld1q_s8(b + 16)));
}

float dot_q4_0_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q4_0*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const int8x16_t eight = vdupq_n_s8(8);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_legacy; ++i) {
    const uint8x16_t q = vld1q_u8(x[i].qs);
    const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, low4)), eight);  // elements 0..15
    const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);    // 16..31
    const int sumi = dot32(lo, hi, y[i].qs);
    sum += float(sumi) * fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
  }
  return sum;
}

float dot_q8_0_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q8_0*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_legacy; ++i) {
    const int sumi = dot32(vld1q_s8(x[i].qs), vld1q_s8(x[i].qs + 16), y[i].qs);
    sum += float(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
  }
  return sum;
}

// Q4_K and Q5_K: each 64 elements, the low nibbles of 32 bytes are group 2h and the high ones group
// 2h + 1; Q5_K's fifth bit of element l is bit 2h (2h + 1) of qh[l].
template <class Block>
float dot_q4_5_k_q8_k(const void* w, const void* a, int64_t n) {
  constexpr bool five_bits = std::is_same_v<Block, block_q5_k>;
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  const uint8x16_t low4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    uint8x16_t qh[2] = {};
    if constexpr (five_bits) qh[0] = vld1q_u8(x[i].qh), qh[1] = vld1q_u8(x[i].qh + 16);
    int isum = 0;
    for (int h = 0; h < qk_k / 64; ++h) {
      int8x16_t lo[2], hi[2];
      for (int k = 0; k < 2; ++k) {
        const uint8x16_t q = vld1q_u8(x[i].qs + 32 * h + 16 * k);
        uint8x16_t l = vandq_u8(q, low4), u = vshrq_n_u8(q, 4);
        if constexpr (five_bits) {
          l = vorrq_u8(l, vshlq_n_u8(vandq_u8(vshlq_u8(qh[k], vdupq_n_s8(int8_t(-2 * h))), one), 4));
          u = vorrq_u8(u, vshlq_n_u8(vandq_u8(vshlq_u8(qh[k], vdupq_n_s8(int8_t(-2 * h - 1))), one), 4));
        }
        lo[k] = vreinterpretq_s8_u8(l);
        hi[k] = vreinterpretq_s8_u8(u);
      }
      isum += quant::get_scale_min(x[i].scales, 2 * h).scale * dot32(lo[0], lo[1], y[i].qs + 64 * h);
      isum += quant::get_scale_min(x[i].scales, 2 * h + 1).scale * dot32(hi[0], hi[1], y[i].qs + 64 * h + 32);
    }
    const float d = fp16_to_f32(x[i].d) * y[i].d;
    const float dmin = fp16_to_f32(x[i].dmin) * y[i].d;
    sum += d * float(isum) - dmin * float(quant::q8_k_min_term(y[i], x[i].scales));
  }
  return sum;
}

float dot_q6_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q6_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  const uint8x16_t low4 = vdupq_n_u8(0x0F), low2 = vdupq_n_u8(0x03);
  const int8x16_t bias = vdupq_n_s8(32);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    int isum = 0;
    // In each half of 128: element 32s + l (l = 0..31) has its low nibble in ql[l + 32 (s % 2)]
    // (the byte's low nibble for s < 2) and its top bits in bits 2s..2s+1 of qh[l]; groups of 16.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[i].ql + 64 * h;
      const uint8_t* qh = x[i].qh + 32 * h;
      const int8_t* sc = x[i].scales + 8 * h;
      const int8_t* q8 = y[i].qs + 128 * h;
      for (int part = 0; part < 2; ++part) {  // l in [16 part, 16 part + 16)
        const uint8x16_t la = vld1q_u8(ql + 16 * part), lb = vld1q_u8(ql + 32 + 16 * part);
        const uint8x16_t top = vld1q_u8(qh + 16 * part);
        const uint8x16_t lo[4] = {vandq_u8(la, low4), vandq_u8(lb, low4), vshrq_n_u8(la, 4), vshrq_n_u8(lb, 4)};
        const uint8x16_t hi[4] = {vandq_u8(top, low2), vandq_u8(vshrq_n_u8(top, 2), low2), vandq_u8(vshrq_n_u8(top, 4), low2),
                                  vshrq_n_u8(top, 6)};
        for (int s = 0; s < 4; ++s) {
          const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo[s], vshlq_n_u8(hi[s], 4))), bias);
          isum += sc[2 * s + part] * dot16_at(q, q8 + 32 * s + 16 * part);
        }
      }
    }
    sum += fp16_to_f32(x[i].d) * y[i].d * float(isum);
  }
  return sum;
}

// ---- Q4_1, Q5_0, Q5_1, IQ4_NL (32-element blocks) ----------------------------------------------

// The 32 codes of a Q5_0/Q5_1 block, nibble | (bit j of qh) << 4 in 0..31: elements 0..15 in c[0],
// 16..31 in c[1]. Element j's high bit is bit j % 8 of qh byte j / 8.
void q5_codes(const uint8_t* qs, const uint8_t* qh, int8x16_t c[2]) {
  const uint8x16_t q = vld1q_u8(qs);
  const uint8x16_t bit = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t top = vdupq_n_u8(0x10);
  const uint8x16_t h0 = vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1]));
  const uint8x16_t h1 = vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3]));
  c[0] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, vdupq_n_u8(0x0F)), vandq_u8(vtstq_u8(h0, bit), top)));
  c[1] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), vandq_u8(vtstq_u8(h1, bit), top)));
}

float dot_q5_0_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q5_0*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  const int8x16_t sixteen = vdupq_n_s8(16);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_legacy; ++i) {
    int8x16_t c[2];
    q5_codes(x[i].qs, x[i].qh, c);
    const int sumi = dot32(vsubq_s8(c[0], sixteen), vsubq_s8(c[1], sixteen), y[i].qs);
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(sumi);
  }
  return sum;
}

// Q4_1 and Q5_1 (codes 0..15 or 0..31, plus the block minimum times the activation block's s).
template <class Block>
float dot_q4_5_1_q8_1(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const block_q8_1*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_legacy; ++i) {
    int8x16_t c[2];
    if constexpr (std::is_same_v<Block, block_q5_1>) {
      q5_codes(x[i].qs, x[i].qh, c);
    } else {
      const uint8x16_t q = vld1q_u8(x[i].qs);
      c[0] = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F)));
      c[1] = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
    }
    const int sumi = dot32(c[0], c[1], y[i].qs);
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(sumi) + fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
  }
  return sum;
}

// The IQ4 levels of 16 code bytes: low nibbles (the first 16 elements) in v[0], high in v[1].
void iq4_levels(const uint8_t* qs, int8x16_t v[2]) {
  const int8x16_t table = vld1q_s8(quant::kvalues_iq4nl);
  const uint8x16_t q = vld1q_u8(qs);
  v[0] = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F)));
  v[1] = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
}

float dot_iq4_nl_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_iq4_nl*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_legacy; ++i) {
    int8x16_t v[2];
    iq4_levels(x[i].qs, v);
    sum += fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d) * float(dot32(v[0], v[1], y[i].qs));
  }
  return sum;
}

// ---- Q2_K, Q3_K, Q5_K, IQ4_XS (256-element blocks) -----------------------------------------------

// Q2_K and Q3_K: bits 2s..2s+1 of qs[32h + l] hold element 128h + 32s + l, so the 32 bytes of half h
// shifted by 2s give groups 8h + 2s (l < 16) and 8h + 2s + 1 of 16 elements each. Returns
// sum_g scale(g) * (codes of g . q8), the codes (0..3) of the 16 elements first passed through
// adjust(codes, k, h, s) (k: the group's half of the 32 bytes).
template <class Scale, class Adjust>
int two_bit_isum(const uint8_t* qs, const int8_t* q8, Scale scale, Adjust adjust) {
  int isum = 0;
  for (int h = 0; h < 2; ++h) {
    const uint8x16_t q[2] = {vld1q_u8(qs + 32 * h), vld1q_u8(qs + 32 * h + 16)};
    for (int s = 0; s < 4; ++s) {
      const int8x16_t shift = vdupq_n_s8(int8_t(-2 * s));
      const int g = 8 * h + 2 * s;
      const int8_t* a = q8 + 128 * h + 32 * s;
      for (int k = 0; k < 2; ++k) {
        const int8x16_t c = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(q[k], shift), vdupq_n_u8(3)));
        isum += scale(g + k) * dot16_at(adjust(c, k, h, s), a + 16 * k);
      }
    }
  }
  return isum;
}

float dot_q2_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q2_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    // sum_g m_g * sum(a in g): the min term, from the activation group sums.
    const uint8x16_t mins = vshrq_n_u8(vld1q_u8(x[i].scales), 4);
    const int16x8_t m0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins))), m1 = vreinterpretq_s16_u16(vmovl_high_u8(mins));
    const int16x8_t b0 = vld1q_s16(y[i].bsums), b1 = vld1q_s16(y[i].bsums + 8);
    int32x4_t mt = vmull_s16(vget_low_s16(b0), vget_low_s16(m0));
    mt = vmlal_high_s16(mt, b0, m0);
    mt = vmlal_s16(mt, vget_low_s16(b1), vget_low_s16(m1));
    mt = vmlal_high_s16(mt, b1, m1);
    const int sum_mins = vaddvq_s32(mt);
    const int isum = two_bit_isum(
        x[i].qs, y[i].qs, [&](int g) { return x[i].scales[g] & 0x0F; }, [](int8x16_t c, int, int, int) { return c; });
    const float dall = y[i].d * fp16_to_f32(x[i].d);
    const float dmin = y[i].d * fp16_to_f32(x[i].dmin);
    sum += dall * float(isum) - dmin * float(sum_mins);
  }
  return sum;
}

float dot_q3_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q3_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  const uint8x16_t four = vdupq_n_u8(4);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    // Bit 2 of element e's code is bit e / 32 of hmask[e % 32]; a clear bit means code - 4.
    const uint8x16_t hm[2] = {vld1q_u8(x[i].hmask), vld1q_u8(x[i].hmask + 16)};
    const int isum = two_bit_isum(
        x[i].qs, y[i].qs, [&](int g) { return quant::q3_k_scale(x[i].scales, g) - 32; },
        [&](int8x16_t c, int k, int h, int s) {
          const uint8x16_t bit = vdupq_n_u8(uint8_t(1u << (4 * h + s)));
          return vsubq_s8(c, vreinterpretq_s8_u8(vbicq_u8(four, vtstq_u8(hm[k], bit))));
        });
    sum += fp16_to_f32(x[i].d) * y[i].d * float(isum);
  }
  return sum;
}

float dot_iq4_xs_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_iq4_xs*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    const float d4d8 = fp16_to_f32(x[i].d) * y[i].d;
    for (int g = 0; g < qk_k / 32; ++g) {
      int8x16_t v[2];
      iq4_levels(x[i].qs + 16 * g, v);
      const int sumi = dot32(v[0], v[1], y[i].qs + 32 * g);
      sum += d4d8 * float(quant::iq4_xs_scale(x[i], g) - 32) * float(sumi);
    }
  }
  return sum;
}

// ---- F32, F16, BF16 ------------------------------------------------------------------------------
// The reference (quant/float_types.cpp) runs float_dot_segments = 4 chains of float FMAs over
// contiguous segments of the row and adds their sums in order. Here the four chains are the four
// lanes of one vector, fed four steps at a time (four elements of each segment, transposed); the
// steps that not every segment has are finished lane by lane with the same FMAs.
struct f32_elements {
  static float32x4_t four(const void* p, int64_t i) { return vld1q_f32(static_cast<const float*>(p) + i); }
  static float one(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
};
struct f16_elements {
  static float32x4_t four(const void* p, int64_t i) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(p) + i)));
  }
  static float one(const void* p, int64_t i) { return fp16_to_f32(static_cast<const uint16_t*>(p)[i]); }
};
struct bf16_elements {
  static float32x4_t four(const void* p, int64_t i) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(static_cast<const uint16_t*>(p) + i), 16));
  }
  static float one(const void* p, int64_t i) { return bf16_to_f32(static_cast<const uint16_t*>(p)[i]); }
};

template <class E>
float segmented_dot(const void* w, const void* a, int64_t n) {
  static_assert(float_dot_segments == 4);
  int64_t start[5], steps = n;
  for (int s = 0; s <= 4; ++s) start[s] = float_dot_segment(n, s);
  for (int s = 0; s < 4; ++s) steps = std::min(steps, start[s + 1] - start[s]);
  float32x4_t acc = vdupq_n_f32(0.0f);  // lane s: the chain of segment s
  int64_t i = 0;
  for (; i + 4 <= steps; i += 4) {
    float32x4_t x[4], y[4];
    for (int s = 0; s < 4; ++s) {
      x[s] = E::four(w, start[s] + i);
      y[s] = E::four(a, start[s] + i);
    }
    transpose4(x);  // x[k] lane s: element start[s] + i + k
    transpose4(y);
    for (int k = 0; k < 4; ++k) acc = vfmaq_f32(acc, x[k], y[k]);
  }
  float sums[4];
  vst1q_f32(sums, acc);
  float total = 0;
  for (int s = 0; s < 4; ++s) {
    float sum = sums[s];
    for (int64_t j = start[s] + i; j < start[s + 1]; ++j) sum = std::fma(E::one(w, j), E::one(a, j), sum);
    total += sum;
  }
  return total;
}

constexpr vec_dot_entry neon_vec_dots[] = {
    {dtype::f32, 1, 4, dtype::f32, 4, segmented_dot<f32_elements>},
    {dtype::f16, 1, 2, dtype::f16, 2, segmented_dot<f16_elements>},
    {dtype::bf16, 1, 2, dtype::bf16, 2, segmented_dot<bf16_elements>},
    {dtype::q4_0, qk_legacy, sizeof(block_q4_0), dtype::q8_0, sizeof(block_q8_0), dot_q4_0_q8_0},
    {dtype::q8_0, qk_legacy, sizeof(block_q8_0), dtype::q8_0, sizeof(block_q8_0), dot_q8_0_q8_0},
    {dtype::q4_k, qk_k, sizeof(block_q4_k), dtype::q8_k, sizeof(block_q8_k), dot_q4_5_k_q8_k<block_q4_k>},
    {dtype::q6_k, qk_k, sizeof(block_q6_k), dtype::q8_k, sizeof(block_q8_k), dot_q6_k_q8_k},
    {dtype::q4_1, qk_legacy, sizeof(block_q4_1), dtype::q8_1, sizeof(block_q8_1), dot_q4_5_1_q8_1<block_q4_1>},
    {dtype::q5_0, qk_legacy, sizeof(block_q5_0), dtype::q8_0, sizeof(block_q8_0), dot_q5_0_q8_0},
    {dtype::q5_1, qk_legacy, sizeof(block_q5_1), dtype::q8_1, sizeof(block_q8_1), dot_q4_5_1_q8_1<block_q5_1>},
    {dtype::iq4_nl, qk_legacy, sizeof(block_iq4_nl), dtype::q8_0, sizeof(block_q8_0), dot_iq4_nl_q8_0},
    {dtype::q2_k, qk_k, sizeof(block_q2_k), dtype::q8_k, sizeof(block_q8_k), dot_q2_k_q8_k},
    {dtype::q3_k, qk_k, sizeof(block_q3_k), dtype::q8_k, sizeof(block_q8_k), dot_q3_k_q8_k},
    {dtype::q5_k, qk_k, sizeof(block_q5_k), dtype::q8_k, sizeof(block_q8_k), dot_q4_5_k_q8_k<block_q5_k>},
    {dtype::iq4_xs, qk_k, sizeof(block_iq4_xs), dtype::q8_k, sizeof(block_q8_k), dot_iq4_xs_q8_k},
};

}  // namespace

const isa_kernels& neon_kernels() {
  static const isa_kernels record{"neon", neon_vec_dots, neon_quantizers()};
  return record;
}

}  // namespace glia::cpu
