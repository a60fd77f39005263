// Blocks of 32: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1. Quantizers are plain round-to-nearest with
// the exact float operations of ggml's quantize_row_*_ref (which llama-quantize uses when no
// importance matrix is given), so re-quantizing a model reproduces its bytes. Dot products sum
// integer products per block and apply the scales once per block, as ggml's scalar kernels do.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/block_types.h"
#include "quant/ref_kernels.h"

namespace glia::quant {
namespace {

constexpr int qk = qk_legacy;

// The signed value of largest magnitude (the first one on ties). Symmetric formats map it to the
// extreme code so the asymmetric range [-8, 7] (or [-16, 15]) spends its extra level on it.
float signed_peak(const float* x) {
  float amax = 0, peak = 0;
  for (int j = 0; j < qk; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      peak = x[j];
    }
  }
  return peak;
}

// C's `(int8_t)v` on a value expected in [0, hi + 1], clamped to [0, hi]; NaN gives 0.
int truncated_code(float v, int hi) {
  if (!(v >= 0)) return 0;
  if (v >= float(hi)) return hi;
  return int(v);
}

uint32_t load_qh(const uint8_t* qh) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

void store_qh(uint8_t* qh, uint32_t v) { std::memcpy(qh, &v, 4); }

// 5-bit code of element j (0..31) of a Q5 block.
int q5_code(const uint8_t* qs, uint32_t qh, int j) {
  const int lo = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return lo | int((qh >> j) & 1u) << 4;
}

// Packs 32 codes (0..31) into nibbles + high-bit word.
void pack_q5(const int* codes, uint8_t* qs, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < qk / 2; ++j) {
    qs[j] = uint8_t((codes[j] & 0x0F) | (codes[j + 16] & 0x0F) << 4);
    h |= uint32_t(codes[j] >> 4 & 1) << j;
    h |= uint32_t(codes[j + 16] >> 4 & 1) << (j + 16);
  }
  store_qh(qh, h);
}

}  // namespace

// ---------------------------------------------------------------- Q4_0

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q4_0*>(src);
  for (int64_t i = 0; i < n / qk; ++i, dst += qk) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < qk / 2; ++j) {
      dst[j] = float((b[i].qs[j] & 0x0F) - 8) * d;
      dst[j + 16] = float((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q4_0*>(dst);
  for (int64_t i = 0; i < n / qk; ++i, src += qk) {
    const float d = signed_peak(src) / -8;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    for (int j = 0; j < qk / 2; ++j) {
      const int lo = truncated_code(src[j] * id + 8.5f, 15);
      const int hi = truncated_code(src[j + 16] * id + 8.5f, 15);
      b[i].qs[j] = uint8_t(lo | hi << 4);
    }
  }
}

float vec_dot_q4_0_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q4_0*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk; ++i) {
    int sumi = 0;
    for (int j = 0; j < qk / 2; ++j) {
      sumi += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
      sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
    }
    sum += float(sumi) * fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
  }
  return sum;
}

// ---------------------------------------------------------------- Q4_1

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q4_1*>(src);
  for (int64_t i = 0; i < n / qk; ++i, dst += qk) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    for (int j = 0; j < qk / 2; ++j) {
      dst[j] = float(b[i].qs[j] & 0x0F) * d + m;
      dst[j + 16] = float(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q4_1*>(dst);
  for (int64_t i = 0; i < n / qk; ++i, src += qk) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < qk; ++j) {
      lo = std::min(lo, src[j]);
      hi = std::max(hi, src[j]);
    }
    const float d = (hi - lo) / 15;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(lo);
    for (int j = 0; j < qk / 2; ++j) {
      const int c0 = truncated_code((src[j] - lo) * id + 0.5f, 15);
      const int c1 = truncated_code((src[j + 16] - lo) * id + 0.5f, 15);
      b[i].qs[j] = uint8_t(c0 | c1 << 4);
    }
  }
}

float vec_dot_q4_1_q8_1(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q4_1*>(w);
  const auto* y = static_cast<const block_q8_1*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk; ++i) {
    int sumi = 0;
    for (int j = 0; j < qk / 2; ++j) {
      sumi += (x[i].qs[j] & 0x0F) * y[i].qs[j];
      sumi += (x[i].qs[j] >> 4) * y[i].qs[j + 16];
    }
    // sum_j (d q_j + m) a_j = d * sum(q a) + m * sum(a), and sum(a) is the stored s.
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(sumi) + fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
  }
  return sum;
}

// ---------------------------------------------------------------- Q5_0

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q5_0*>(src);
  for (int64_t i = 0; i < n / qk; ++i, dst += qk) {
    const float d = fp16_to_f32(b[i].d);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < qk; ++j) dst[j] = float(q5_code(b[i].qs, qh, j) - 16) * d;
  }
}

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q5_0*>(dst);
  for (int64_t i = 0; i < n / qk; ++i, src += qk) {
    const float d = signed_peak(src) / -16;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    int codes[qk];
    for (int j = 0; j < qk; ++j) codes[j] = truncated_code(src[j] * id + 16.5f, 31);
    pack_q5(codes, b[i].qs, b[i].qh);
  }
}

float vec_dot_q5_0_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q5_0*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const uint32_t qh = load_qh(x[i].qh);
    int sumi = 0;
    for (int j = 0; j < qk; ++j) sumi += (q5_code(x[i].qs, qh, j) - 16) * y[i].qs[j];
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(sumi);
  }
  return sum;
}

// ---------------------------------------------------------------- Q5_1

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q5_1*>(src);
  for (int64_t i = 0; i < n / qk; ++i, dst += qk) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < qk; ++j) dst[j] = float(q5_code(b[i].qs, qh, j)) * d + m;
  }
}

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q5_1*>(dst);
  for (int64_t i = 0; i < n / qk; ++i, src += qk) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < qk; ++j) {
      lo = std::min(lo, src[j]);
      hi = std::max(hi, src[j]);
    }
    const float d = (hi - lo) / 31;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(lo);
    int codes[qk];
    for (int j = 0; j < qk; ++j) codes[j] = truncated_code((src[j] - lo) * id + 0.5f, 31);
    pack_q5(codes, b[i].qs, b[i].qh);
  }
}

float vec_dot_q5_1_q8_1(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q5_1*>(w);
  const auto* y = static_cast<const block_q8_1*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk; ++i) {
    const uint32_t qh = load_qh(x[i].qh);
    int sumi = 0;
    for (int j = 0; j < qk; ++j) sumi += q5_code(x[i].qs, qh, j) * y[i].qs[j];
    sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(sumi) + fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
  }
  return sum;
}

// ---------------------------------------------------------------- Q8_0 / Q8_1

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q8_0*>(src);
  for (int64_t i = 0; i < n / qk; ++i, dst += qk) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < qk; ++j) dst[j] = float(b[i].qs[j]) * d;
  }
}

namespace {
// Shared by Q8_0 and Q8_1: d = amax / 127 (kept in float for the quants and the Q8_1 sum),
// q = roundf(x / d) (ties away from zero). Returns the float d and sum(q).
float quantize_block_q8(const float* x, int8_t* qs, int* sum_q) {
  float amax = 0;
  for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  int sum = 0;
  for (int j = 0; j < qk; ++j) {
    const float v = std::round(x[j] * id);
    qs[j] = int8_t(v >= -127.0f && v <= 127.0f ? v : (v > 0 ? 127.0f : v < 0 ? -127.0f : 0.0f));
    sum += qs[j];
  }
  *sum_q = sum;
  return d;
}
}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q8_0*>(dst);
  for (int64_t i = 0; i < n / qk; ++i, src += qk) {
    int sum;
    b[i].d = f32_to_fp16(quantize_block_q8(src, b[i].qs, &sum));
  }
}

float vec_dot_q8_0_q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q8_0*>(w);
  const auto* y = static_cast<const block_q8_0*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk; ++i) {
    int sumi = 0;
    for (int j = 0; j < qk; ++j) sumi += x[i].qs[j] * y[i].qs[j];
    sum += float(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
  }
  return sum;
}

void dequantize_row_q8_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q8_1*>(src);
  for (int64_t i = 0; i < n / qk; ++i, dst += qk) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < qk; ++j) dst[j] = float(b[i].qs[j]) * d;
  }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q8_1*>(dst);
  for (int64_t i = 0; i < n / qk; ++i, src += qk) {
    int sum;
    const float d = quantize_block_q8(src, b[i].qs, &sum);
    b[i].d = f32_to_fp16(d);
    b[i].s = f32_to_fp16(float(sum) * d);  // the unrounded d, as ggml
  }
}

// Q8_1 x Q8_1 has no use in ggml; it is defined so every row of the table has a dot product.
float vec_dot_q8_1_q8_1(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q8_1*>(w);
  const auto* y = static_cast<const block_q8_1*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk; ++i) {
    int sumi = 0;
    for (int j = 0; j < qk; ++j) sumi += x[i].qs[j] * y[i].qs[j];
    sum += float(sumi) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
  }
  return sum;
}

}  // namespace glia::quant
