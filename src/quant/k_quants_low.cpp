// Q2_K and Q3_K: super-blocks of 256 in 16 groups of 16. Quantizers follow ggml's
// quantize_row_q2_K_ref / q3_K_ref: fit each group, quantize the group scales against one
// super-scale (fp16), then re-fit every code against the scale as it will be decoded.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/block_types.h"
#include "quant/k_quant_scales.h"
#include "quant/k_quant_search.h"
#include "quant/ref_kernels.h"

namespace glia::quant {
namespace {

// Bits 2s..2s+1 of qs[32h + l] hold element 128h + 32s + l (shared by Q2_K and Q3_K).
int two_bit_code(const uint8_t* qs, int e) {
  const int h = e / 128, s = (e % 128) / 32, l = e % 32;
  return (qs[32 * h + l] >> (2 * s)) & 3;
}

void pack_two_bit_codes(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < qk_k; h += 128)
    for (int l = 0; l < 32; ++l)
      qs[h / 4 + l] = uint8_t(L[h + l] | L[h + l + 32] << 2 | L[h + l + 64] << 4 | L[h + l + 96] << 6);
}

void set_q3_k_scale(uint8_t* scales, int g, int code) {
  if (g < 8)
    scales[g] = uint8_t(code & 0x0F);
  else
    scales[g - 8] |= uint8_t((code & 0x0F) << 4);
  scales[8 + g % 4] |= uint8_t((code >> 4) << (2 * (g / 4)));
}

// Q3_K code of element e in -4..3: bit 2 of the stored value lives in bit e/32 of hmask[e % 32].
int q3_k_value(const block_q3_k& b, int e) {
  const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
  return two_bit_code(b.qs, e) - (high ? 0 : 4);
}

}  // namespace

// ---------------------------------------------------------------- Q2_K

void dequantize_row_q2_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q2_k*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i, dst += qk_k) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    for (int e = 0; e < qk_k; ++e) {
      const uint8_t sc = b[i].scales[e / 16];
      const float dl = d * float(sc & 0x0F);
      const float ml = dmin * float(sc >> 4);
      dst[e] = dl * float(two_bit_code(b[i].qs, e)) - ml;
    }
  }
}

void quantize_row_q2_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q2_k*>(dst);
  constexpr float scale_levels = 15.0f;  // 4-bit scale and min codes
  for (int64_t i = 0; i < n / qk_k; ++i, src += qk_k) {
    uint8_t L[qk_k];
    float scales[qk_k / 16], mins[qk_k / 16];
    float weights[qk_k];
    for (int l = 0; l < qk_k; ++l) weights[l] = std::fabs(src[l]);
    fit_affine_groups(qk_k / 16, 16, 3, src, weights, L, mins, scales, -0.5f, 0.1f, 15, true);
    float max_scale = 0, max_min = 0;  // both non-negative: the min is subtracted
    for (int g = 0; g < qk_k / 16; ++g) {
      max_scale = std::max(max_scale, scales[g]);
      max_min = std::max(max_min, mins[g]);
    }
    if (max_scale > 0) {
      const float iscale = scale_levels / max_scale;
      for (int g = 0; g < qk_k / 16; ++g) b[i].scales[g] = uint8_t(nearest_int(iscale * scales[g]));
      b[i].d = f32_to_fp16(max_scale / scale_levels);
    } else {
      std::memset(b[i].scales, 0, sizeof(b[i].scales));
      b[i].d = f32_to_fp16(0.0f);
    }
    if (max_min > 0) {
      const float iscale = scale_levels / max_min;
      for (int g = 0; g < qk_k / 16; ++g) b[i].scales[g] |= uint8_t(nearest_int(iscale * mins[g]) << 4);
      b[i].dmin = f32_to_fp16(max_min / scale_levels);
    } else {
      b[i].dmin = f32_to_fp16(0.0f);
    }
    const float d_all = fp16_to_f32(b[i].d), dmin_all = fp16_to_f32(b[i].dmin);
    for (int g = 0; g < qk_k / 16; ++g) {
      const float d = d_all * float(b[i].scales[g] & 0x0F);
      if (d == 0) continue;
      const float dm = dmin_all * float(b[i].scales[g] >> 4);
      for (int l = 0; l < 16; ++l)
        L[16 * g + l] = uint8_t(std::clamp(nearest_int((src[16 * g + l] + dm) / d), 0, 3));
    }
    pack_two_bit_codes(L, b[i].qs);
  }
}

float vec_dot_q2_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q2_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    int sum_mins = 0;  // sum_g m_g * sum(a in g): the min term, from the activation group sums
    for (int g = 0; g < qk_k / 16; ++g) sum_mins += y[i].bsums[g] * (x[i].scales[g] >> 4);
    int isum = 0;
    for (int g = 0; g < qk_k / 16; ++g) {
      int group = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) group += y[i].qs[e] * two_bit_code(x[i].qs, e);
      isum += (x[i].scales[g] & 0x0F) * group;
    }
    const float dall = y[i].d * fp16_to_f32(x[i].d);
    const float dmin = y[i].d * fp16_to_f32(x[i].dmin);
    sum += dall * float(isum) - dmin * float(sum_mins);
  }
  return sum;
}

// ---------------------------------------------------------------- Q3_K

void dequantize_row_q3_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q3_k*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i, dst += qk_k) {
    const float d_all = fp16_to_f32(b[i].d);
    for (int e = 0; e < qk_k; ++e) {
      const float dl = d_all * float(q3_k_scale(b[i].scales, e / 16) - 32);
      dst[e] = dl * float(q3_k_value(b[i], e));
    }
  }
}

void quantize_row_q3_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q3_k*>(dst);
  for (int64_t i = 0; i < n / qk_k; ++i, src += qk_k) {
    int8_t L[qk_k];
    float scales[qk_k / 16];
    fit_symmetric_refined_groups(qk_k / 16, 16, 4, src, L, scales);
    float amax = 0, max_scale = 0;
    for (int g = 0; g < qk_k / 16; ++g) {
      if (std::fabs(scales[g]) > amax) {
        amax = std::fabs(scales[g]);
        max_scale = scales[g];
      }
    }
    std::memset(b[i].scales, 0, sizeof(b[i].scales));
    if (max_scale != 0) {
      // Signed 6-bit scales: the largest-magnitude one maps to -32 (the asymmetric end).
      const float iscale = -32.0f / max_scale;
      for (int g = 0; g < qk_k / 16; ++g)
        set_q3_k_scale(b[i].scales, g, std::clamp(int(int8_t(nearest_int(iscale * scales[g]))), -32, 31) + 32);
      b[i].d = f32_to_fp16(1 / iscale);
    } else {
      b[i].d = f32_to_fp16(0.0f);
    }
    const float d_all = fp16_to_f32(b[i].d);
    for (int g = 0; g < qk_k / 16; ++g) {
      const float d = d_all * float(q3_k_scale(b[i].scales, g) - 32);
      if (d == 0) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * g + l] = int8_t(std::clamp(nearest_int(src[16 * g + l] / d), -4, 3) + 4);
    }
    std::memset(b[i].hmask, 0, sizeof(b[i].hmask));
    uint8_t low[qk_k];
    for (int e = 0; e < qk_k; ++e) {
      if (L[e] > 3) b[i].hmask[e % 32] |= uint8_t(1 << (e / 32));
      low[e] = uint8_t(L[e] > 3 ? L[e] - 4 : L[e]);
    }
    pack_two_bit_codes(low, b[i].qs);
  }
}

float vec_dot_q3_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q3_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    int isum = 0;
    for (int g = 0; g < qk_k / 16; ++g) {
      int group = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) group += y[i].qs[e] * q3_k_value(x[i], e);
      isum += (q3_k_scale(x[i].scales, g) - 32) * group;
    }
    sum += fp16_to_f32(x[i].d) * y[i].d * float(isum);
  }
  return sum;
}

}  // namespace glia::quant
