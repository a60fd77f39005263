// IQ4_NL (blocks of 32, one fp16 scale) and IQ4_XS (super-blocks of 256 with 6-bit group scales):
// 4-bit codes index the non-uniform table kvalues_iq4nl. The quantizer is the one llama-quantize
// runs without an importance matrix (ggml's quantize_iq4_nl / quantize_iq4_xs: weights x^2,
// 7 scale trials each way).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/block_types.h"
#include "quant/k_quant_search.h"
#include "quant/ref_kernels.h"

namespace glia::quant {
namespace {

// Index of the table level nearest to x (the upper one on an exact midpoint). Comparing 2x with
// the sum of two neighbours keeps the midpoint test exact.
int nearest_level(float x) {
  const float x2 = x + x;
  int idx = 0;
  for (int k = 1; k < 16; ++k)
    if (x2 >= float(kvalues_iq4nl[k - 1] + kvalues_iq4nl[k])) idx = k;
  return idx;
}

void pack_nibbles(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t(L[j] | L[j + 16] << 4);
}

}  // namespace

// Best scale for one group of 32: start from the scale putting the signed peak on the level -127,
// then try inverse scales (t - 127) / peak for t in [-iq4_trials, iq4_trials], keeping the best
// x^2-weighted least-squares fit; 0 for an all-zero group.
float fit_iq4_group(const float* x) {
  float amax = 0, peak = 0;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      peak = x[j];
    }
  }
  if (amax < group_max_eps) return 0.0f;
  auto fit = [&](float id, float* sumqx, float* sumq2) {
    *sumqx = 0;
    *sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = float(kvalues_iq4nl[nearest_level(id * x[j])]);
      const float w = x[j] * x[j];
      *sumqx += w * q * x[j];
      *sumq2 += w * q * q;
    }
  };
  float sumqx, sumq2;
  fit(1 / (-peak / float(kvalues_iq4nl[0])), &sumqx, &sumq2);
  float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int t = -iq4_trials; t <= iq4_trials; ++t) {
    fit(float(t + kvalues_iq4nl[0]) / peak, &sumqx, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

void fit_iq4_groups(int n_groups, const float* x, float* scale_out) {
  by_groups_of_8(
      n_groups, [&](int g) { fit_iq4_x8(x + 32 * g, scale_out + g); },
      [&](int g) { scale_out[g] = fit_iq4_group(x + 32 * g); });
}

// ---------------------------------------------------------------- IQ4_NL

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_iq4_nl*>(src);
  for (int64_t i = 0; i < n / qk_legacy; ++i, dst += qk_legacy) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * float(kvalues_iq4nl[b[i].qs[j] & 0x0F]);
      dst[j + 16] = d * float(kvalues_iq4nl[b[i].qs[j] >> 4]);
    }
  }
}

void quantize_row_iq4_nl(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_iq4_nl*>(dst);
  // The scale searches of 8 blocks at a time (they dominate the quantizer), then each block's codes.
  constexpr int64_t batch = 8;
  float scales[batch];
  for (int64_t i = 0; i < n / qk_legacy; ++i, src += qk_legacy) {
    if (i % batch == 0) fit_iq4_groups(int(std::min(batch, n / qk_legacy - i)), src, scales);
    uint8_t L[32];
    const float d = scales[i % batch];
    b[i].d = f32_to_fp16(d);
    // Re-pick every code against the final scale (the trials above only scored scales).
    const float id = d != 0 ? 1 / d : 0.0f;
    for (int j = 0; j < 32; ++j) L[j] = uint8_t(nearest_level(id * src[j]));
    pack_nibbles(L, b[i].qs);
  }
}

float vec_dot_iq4_nl_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_iq4_nl*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_legacy; ++i) {
    int sumi = 0;
    for (int j = 0; j < 16; ++j) {
      sumi += y[i].qs[j] * kvalues_iq4nl[x[i].qs[j] & 0x0F];
      sumi += y[i].qs[j + 16] * kvalues_iq4nl[x[i].qs[j] >> 4];
    }
    sum += fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d) * float(sumi);
  }
  return sum;
}

// ---------------------------------------------------------------- IQ4_XS

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_iq4_xs*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i) {
    const float d = fp16_to_f32(b[i].d);
    for (int g = 0; g < qk_k / 32; ++g, dst += 32) {
      const float dl = d * float(iq4_xs_scale(b[i], g) - 32);
      const uint8_t* qs = b[i].qs + 16 * g;
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * float(kvalues_iq4nl[qs[j] & 0x0F]);
        dst[j + 16] = dl * float(kvalues_iq4nl[qs[j] >> 4]);
      }
    }
  }
}

void quantize_row_iq4_xs(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_iq4_xs*>(dst);
  for (int64_t i = 0; i < n / qk_k; ++i, src += qk_k) {
    uint8_t L[qk_k];
    float scales[qk_k / 32];
    float amax_scale = 0, max_scale = 0;
    fit_iq4_groups(qk_k / 32, src, scales);
    for (int g = 0; g < qk_k / 32; ++g) {
      if (std::fabs(scales[g]) > amax_scale) {
        amax_scale = std::fabs(scales[g]);
        max_scale = scales[g];
      }
    }
    // Signed 6-bit group scales against one fp16 super-scale; the largest maps to -32.
    const float d = -max_scale / 32;
    b[i].d = f32_to_fp16(d);
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof(b[i].scales_l));
    const float id = d != 0 ? 1 / d : 0.0f;
    for (int g = 0; g < qk_k / 32; ++g) {
      const int l = std::clamp(nearest_int(id * scales[g]), -32, 31);
      const float dl = d * float(l);
      const float idl = dl != 0 ? 1 / dl : 0.0f;
      for (int j = 0; j < 32; ++j) L[32 * g + j] = uint8_t(nearest_level(idl * src[32 * g + j]));
      const int code = l + 32;
      b[i].scales_l[g / 2] |= uint8_t((code & 0x0F) << (4 * (g % 2)));
      b[i].scales_h |= uint16_t((code >> 4) << (2 * g));
      pack_nibbles(L + 32 * g, b[i].qs + 16 * g);
    }
  }
}

float vec_dot_iq4_xs_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_iq4_xs*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    const float d4d8 = fp16_to_f32(x[i].d) * y[i].d;
    for (int g = 0; g < qk_k / 32; ++g) {
      const uint8_t* qs = x[i].qs + 16 * g;
      const int8_t* q8 = y[i].qs + 32 * g;
      int sumi = 0;
      for (int j = 0; j < 16; ++j) {
        sumi += q8[j] * kvalues_iq4nl[qs[j] & 0x0F];
        sumi += q8[j + 16] * kvalues_iq4nl[qs[j] >> 4];
      }
      sum += d4d8 * float(iq4_xs_scale(x[i], g) - 32) * float(sumi);
    }
  }
  return sum;
}

}  // namespace glia::quant
