#include "backend/ref/ref_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/fp16.h"
#include "quant/activation.h"

namespace glia::ref {

void dequantize_row(const weight_view& w, int64_t r, float* out) {
  type_info(w.type).dequantize_row(w.row(r), out, w.n_in);
}

void convert_activation_row(const weight_view& w, const float* x, std::vector<uint8_t>& out) {
  const dtype dot = type_info(w.type).dot_type;
  out.resize(row_bytes(dot, w.n_in));
  quant::activation_quantizer(dot)(x, out.data(), w.n_in);
}

float dot_row(const weight_view& w, int64_t r, const uint8_t* act) {
  return type_info(w.type).vec_dot(w.row(r), act, w.n_in);
}

double sum_of_squares(const float* x, int64_t n) {
  double s[16] = {};
  for (int64_t i = 0; i < n; ++i) s[i % 16] += double(x[i] * x[i]);
  double d[4];
  for (int j = 0; j < 4; ++j) d[j] = (s[j] + s[j + 8]) + (s[j + 4] + s[j + 12]);
  return (d[0] + d[2]) + (d[1] + d[3]);
}

void rms_norm_row(const float* x, const float* w, float* y, int64_t n, float eps, sum_of_squares_fn sum) {
  const float mean = float(sum(x, n) / double(n));
  const float s = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * s) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
  }
}

namespace {

// YaRN: the dimension (in pairs' units times two) where the rotation count over the original context
// equals n_rot (https://arxiv.org/abs/2309.00071, as ggml_rope_yarn_corr_dim computes it).
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot * 2.0f * float(M_PI))) / (2.0f * std::log(base));
}

float yarn_ramp(float low, float high, int i0) {
  const float y = (float(i0 / 2) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

rope_constants rope_constants_for(const rope_params& p) {
  rope_constants k;
  k.theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_rot));
  k.mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) {
    const float start = std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base));
    const float end = std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base));
    k.corr_low = std::max(0.0f, start);
    k.corr_high = std::min(float(p.n_rot - 1), end);
    k.mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
  }
  return k;
}

void rope_cos_sin(int32_t pos, const rope_params& p, float* cs) {
  const rope_constants k = rope_constants_for(p);
  float theta = float(pos);
  for (int i0 = 0; i0 < p.n_rot; i0 += 2) {
    const float ff = p.freq_factors ? p.freq_factors[i0 / 2] : 1.0f;
    const float theta_extrap = theta / ff;
    const float theta_interp = p.freq_scale * theta_extrap;
    float angle = theta_interp;
    if (p.ext_factor != 0.0f) {
      const float ramp_mix = yarn_ramp(k.corr_low, k.corr_high, i0) * p.ext_factor;
      angle = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
    }
    cs[i0] = std::cos(angle) * k.mscale;
    cs[i0 + 1] = std::sin(angle) * k.mscale;
    theta *= k.theta_scale;
  }
}

void rope_apply(float* x, const rope_params& p, const float* cs) {
  const int half = p.n_rot / 2;
  for (int i = 0; i < half; ++i) {
    const float c = cs[2 * i], s = cs[2 * i + 1];
    // normal: pair (2i, 2i+1); neox: pair (i, i + n_rot/2).
    const int a = p.style == rope_style::normal ? 2 * i : i;
    const int b = p.style == rope_style::normal ? 2 * i + 1 : i + half;
    const float x0 = x[a], x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
  }
}

namespace {
// Stores the n_kv_head heads of one slot (src: [n_kv_head][head_dim]) into the buffer of `part`.
void store_row(const kv_layer_view& kv, kv_part part, int64_t slot, const float* src, quantize_row_fn to_f16) {
  void* buf = part == kv_part::k ? kv.k : kv.v;
  const int head_dim = part == kv_part::k ? kv.head_dim_k : kv.head_dim_v;
  for (int h = 0; h < kv.n_kv_head; ++h) {
    const float* row = src + int64_t(h) * head_dim;
    if (kv.rows(part)) {
      const int64_t off = kv.row_offset(slot, h, head_dim);
      if (kv.type == dtype::f32) {
        std::memcpy(static_cast<float*>(buf) + off, row, size_t(head_dim) * sizeof(float));
      } else {
        to_f16(row, static_cast<uint16_t*>(buf) + off, head_dim);
      }
      continue;
    }
    // Elements kv_kt_chunk apart; fp16 converted in pieces of the row (the backend's rounding).
    const int64_t first = kv.offset(part, slot, h, 0);
    if (kv.type == dtype::f32) {
      float* dst = static_cast<float*>(buf) + first;
      for (int d = 0; d < head_dim; ++d) dst[d * kv_kt_chunk] = row[d];
      continue;
    }
    uint16_t* dst = static_cast<uint16_t*>(buf) + first;
    constexpr int piece = 64;
    uint16_t halves[piece];
    for (int d0 = 0; d0 < head_dim; d0 += piece) {
      const int n = std::min(piece, head_dim - d0);
      to_f16(row + d0, halves, n);
      for (int d = 0; d < n; ++d) dst[(d0 + d) * kv_kt_chunk] = halves[d];
    }
  }
}
}  // namespace

void kv_store_token(const kv_layer_view& kv, const float* k, const float* v, int64_t t, int32_t pos,
                    quantize_row_fn to_f16) {
  const int64_t slot = pos % kv.n_slots;
  if (!to_f16) to_f16 = type_info(dtype::f16).quantize_row;
  store_row(kv, kv_part::k, slot, k + t * kv.n_kv_head * kv.head_dim_k, to_f16);
  store_row(kv, kv_part::v, slot, v + t * kv.n_kv_head * kv.head_dim_v, to_f16);
  kv.slot_pos[slot] = pos;
}

void load_kv_row(const kv_layer_view& kv, kv_part part, int64_t slot, int kv_head, float* out) {
  const void* buf = part == kv_part::k ? kv.k : kv.v;
  const int head_dim = part == kv_part::k ? kv.head_dim_k : kv.head_dim_v;
  for (int d = 0; d < head_dim; ++d) {
    const int64_t off = kv.offset(part, slot, kv_head, d);
    out[d] = kv.type == dtype::f32 ? static_cast<const float*>(buf)[off] : fp16_to_f32(static_cast<const uint16_t*>(buf)[off]);
  }
}

float gelu_tanh_exact(float x) {
  constexpr float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
  constexpr float coef_a = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

// GELU of every fp16 value, rounded to fp16: the reference engine's CPU table.
const float* gelu_fp16_table() {
  static const std::unique_ptr<float[]> table = [] {
    auto t = std::make_unique<float[]>(65536);
    for (uint32_t i = 0; i < 65536; ++i) t[i] = round_fp16(gelu_tanh_exact(fp16_to_f32(uint16_t(i))));
    return t;
  }();
  return table.get();
}

float activate(float x, activation act) {
  if (act == activation::silu) return x / (1.0f + std::exp(-x));
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return gelu_fp16_table()[f32_to_fp16(x)];
}

}  // namespace glia::ref
