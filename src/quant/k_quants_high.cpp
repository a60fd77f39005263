// Q4_K, Q5_K (8 groups of 32, affine with 6-bit scale and min codes) and Q6_K (16 groups of 16,
// symmetric with int8 scales). Quantizers follow ggml's quantize_row_q{4,5,6}_K_ref.
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

void set_scale_min(uint8_t* q, int g, int scale, int min) {
  if (g < 4) {
    q[g] = uint8_t(scale);
    q[g + 4] = uint8_t(min);
  } else {
    q[g + 4] = uint8_t((scale & 0x0F) | (min & 0x0F) << 4);
    q[g - 4] |= uint8_t((scale >> 4) << 6);
    q[g] |= uint8_t((min >> 4) << 6);
  }
}

// Element 64h + l (l < 32) is the low nibble of qs[32h + l]; 64h + 32 + l the high nibble.
int q4_k_code(const uint8_t* qs, int e) {
  const uint8_t byte = qs[32 * (e / 64) + e % 32];
  return (e % 64) < 32 ? byte & 0x0F : byte >> 4;
}

int q5_k_code(const block_q5_k& b, int e) {
  const int bit = 2 * (e / 64) + ((e % 64) < 32 ? 0 : 1);
  return q4_k_code(b.qs, e) | ((b.qh[e % 32] >> bit) & 1) << 4;
}

// In each half of 128: element 32s + l has its low nibble in ql[64h + l + 32*(s%2)] (low nibble
// for s < 2) and its top two bits in bits 2s..2s+1 of qh[32h + l]. Returns q - 32.
int q6_k_value(const block_q6_k& b, int e) {
  const int h = e / 128, s = (e % 128) / 32, l = e % 32;
  const uint8_t lo_byte = b.ql[64 * h + l + 32 * (s % 2)];
  const int lo = s < 2 ? lo_byte & 0x0F : lo_byte >> 4;
  const int hi = (b.qh[32 * h + l] >> (2 * s)) & 3;
  return (lo | hi << 4) - 32;
}

// Shared quantizer of Q4_K and Q5_K (nmax = 15 or 31): codes into L[256], scales into `scales`,
// super-scales into d/dmin.
void quantize_affine_k(const float* x, int nmax, float rmin, int nstep, uint8_t* L, uint8_t* scales,
                       uint16_t* d_out, uint16_t* dmin_out) {
  float group_scale[8], group_min[8];
  float weights[256];
  for (int g = 0; g < 8; ++g) {
    const float* xg = x + 32 * g;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xg[l] * xg[l];
    // Weight each element by the group's rms plus its own magnitude.
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[32 * g + l] = av_x + std::fabs(xg[l]);
  }
  fit_affine_groups(8, 32, nmax, x, weights, L, group_min, group_scale, rmin, 0.1f, nstep, false);
  float max_scale = 0, max_min = 0;
  for (int g = 0; g < 8; ++g) {
    max_scale = std::max(max_scale, group_scale[g]);
    max_min = std::max(max_min, group_min[g]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int g = 0; g < 8; ++g) {
    const int ls = std::min(63, int(uint8_t(nearest_int(inv_scale * group_scale[g]))));
    const int lm = std::min(63, int(uint8_t(nearest_int(inv_min * group_min[g]))));
    set_scale_min(scales, g, ls, lm);
  }
  *d_out = f32_to_fp16(max_scale / 63.0f);
  *dmin_out = f32_to_fp16(max_min / 63.0f);
  const float d_all = fp16_to_f32(*d_out), dmin_all = fp16_to_f32(*dmin_out);
  for (int g = 0; g < 8; ++g) {
    const scale_min sm = get_scale_min(scales, g);
    const float d = d_all * float(sm.scale);
    if (d == 0) continue;
    const float dm = dmin_all * float(sm.min);
    for (int l = 0; l < 32; ++l) L[32 * g + l] = uint8_t(std::clamp(nearest_int((x[32 * g + l] + dm) / d), 0, nmax));
  }
}

}  // namespace

// ---------------------------------------------------------------- Q4_K

void dequantize_row_q4_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q4_k*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i, dst += qk_k) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    for (int e = 0; e < qk_k; ++e) {
      const scale_min sm = get_scale_min(b[i].scales, e / 32);
      dst[e] = d * float(sm.scale) * float(q4_k_code(b[i].qs, e)) - dmin * float(sm.min);
    }
  }
}

void quantize_row_q4_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q4_k*>(dst);
  for (int64_t i = 0; i < n / qk_k; ++i, src += qk_k) {
    uint8_t L[qk_k];
    quantize_affine_k(src, 15, -1.0f, 20, L, b[i].scales, &b[i].d, &b[i].dmin);
    for (int h = 0; h < qk_k / 64; ++h)
      for (int l = 0; l < 32; ++l) b[i].qs[32 * h + l] = uint8_t(L[64 * h + l] | L[64 * h + 32 + l] << 4);
  }
}

float vec_dot_q4_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q4_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    int isum = 0;
    for (int g = 0; g < 8; ++g) {
      int group = 0;
      for (int e = 32 * g; e < 32 * g + 32; ++e) group += y[i].qs[e] * q4_k_code(x[i].qs, e);
      isum += get_scale_min(x[i].scales, g).scale * group;
    }
    const float d = fp16_to_f32(x[i].d) * y[i].d;
    const float dmin = fp16_to_f32(x[i].dmin) * y[i].d;
    sum += d * float(isum) - dmin * float(q8_k_min_term(y[i], x[i].scales));
  }
  return sum;
}

// ---------------------------------------------------------------- Q5_K

void dequantize_row_q5_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q5_k*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i, dst += qk_k) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    for (int e = 0; e < qk_k; ++e) {
      const scale_min sm = get_scale_min(b[i].scales, e / 32);
      dst[e] = d * float(sm.scale) * float(q5_k_code(b[i], e)) - dmin * float(sm.min);
    }
  }
}

void quantize_row_q5_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q5_k*>(dst);
  for (int64_t i = 0; i < n / qk_k; ++i, src += qk_k) {
    uint8_t L[qk_k];
    quantize_affine_k(src, 31, -0.5f, 15, L, b[i].scales, &b[i].d, &b[i].dmin);
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    for (int h = 0; h < qk_k / 64; ++h) {
      for (int l = 0; l < 32; ++l) {
        const int c0 = L[64 * h + l], c1 = L[64 * h + 32 + l];
        b[i].qh[l] |= uint8_t((c0 >> 4) << (2 * h) | (c1 >> 4) << (2 * h + 1));
        b[i].qs[32 * h + l] = uint8_t((c0 & 0x0F) | (c1 & 0x0F) << 4);
      }
    }
  }
}

float vec_dot_q5_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q5_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    int isum = 0;
    for (int g = 0; g < 8; ++g) {
      int group = 0;
      for (int e = 32 * g; e < 32 * g + 32; ++e) group += y[i].qs[e] * q5_k_code(x[i], e);
      isum += get_scale_min(x[i].scales, g).scale * group;
    }
    const float d = fp16_to_f32(x[i].d) * y[i].d;
    const float dmin = fp16_to_f32(x[i].dmin) * y[i].d;
    sum += d * float(isum) - dmin * float(q8_k_min_term(y[i], x[i].scales));
  }
  return sum;
}

// ---------------------------------------------------------------- Q6_K

void dequantize_row_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q6_k*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i, dst += qk_k) {
    const float d = fp16_to_f32(b[i].d);
    for (int e = 0; e < qk_k; ++e) dst[e] = d * float(b[i].scales[e / 16]) * float(q6_k_value(b[i], e));
  }
}

void quantize_row_q6_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q6_k*>(dst);
  for (int64_t i = 0; i < n / qk_k; ++i, src += qk_k) {
    int8_t L[qk_k];
    float scales[qk_k / 16];
    fit_symmetric_weighted_groups(qk_k / 16, 16, 32, src, L, scales);
    float max_abs_scale = 0, max_scale = 0;
    for (int g = 0; g < qk_k / 16; ++g) {
      if (std::fabs(scales[g]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[g]);
        max_scale = scales[g];
      }
    }
    if (max_abs_scale < group_max_eps) {
      std::memset(&b[i], 0, sizeof(b[i]));
      continue;
    }
    // int8 group scales: the largest-magnitude one maps to -128.
    const float iscale = -128.0f / max_scale;
    b[i].d = f32_to_fp16(1 / iscale);
    for (int g = 0; g < qk_k / 16; ++g) b[i].scales[g] = int8_t(std::min(127, nearest_int(iscale * scales[g])));
    const float d_all = fp16_to_f32(b[i].d);
    for (int g = 0; g < qk_k / 16; ++g) {
      const float d = d_all * float(b[i].scales[g]);
      if (d == 0) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * g + l] = int8_t(std::clamp(nearest_int(src[16 * g + l] / d), -32, 31) + 32);
    }
    std::memset(b[i].ql, 0, sizeof(b[i].ql));
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    for (int e = 0; e < qk_k; ++e) {
      const int h = e / 128, s = (e % 128) / 32, l = e % 32;
      const int code = L[e];
      b[i].ql[64 * h + l + 32 * (s % 2)] |= uint8_t((code & 0x0F) << (s < 2 ? 0 : 4));
      b[i].qh[32 * h + l] |= uint8_t((code >> 4) << (2 * s));
    }
  }
}

float vec_dot_q6_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q6_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    int isum = 0;
    for (int g = 0; g < qk_k / 16; ++g) {
      int group = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) group += y[i].qs[e] * q6_k_value(x[i], e);
      isum += x[i].scales[g] * group;
    }
    sum += fp16_to_f32(x[i].d) * y[i].d * float(isum);
  }
  return sum;
}

}  // namespace glia::quant
