#include "quant/activation.h"

#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "quant/block_types.h"

namespace glia::quant {
namespace {

// One block of 32: returns the float d and sum(q).
float quantize_block_x86(const float* x, int8_t* qs, int* sum_q) {
  float amax = 0;
  for (int j = 0; j < qk_legacy; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0 ? 127.0f / amax : 0.0f;
  int sum = 0;
  for (int j = 0; j < qk_legacy; ++j) {
    // nearbyint rounds to nearest even in the default rounding mode, like _mm256_round_ps.
    const float v = std::nearbyint(x[j] * id);
    qs[j] = int8_t(v >= -127.0f && v <= 127.0f ? v : (v > 0 ? 127.0f : v < 0 ? -127.0f : 0.0f));
    sum += qs[j];
  }
  *sum_q = sum;
  return d;
}

}  // namespace

void quantize_row_q8_0_x86(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q8_0*>(dst);
  for (int64_t i = 0; i < n / qk_legacy; ++i, src += qk_legacy) {
    int sum;
    b[i].d = f32_to_fp16(quantize_block_x86(src, b[i].qs, &sum));
  }
}

void quantize_row_q8_1_x86(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q8_1*>(dst);
  for (int64_t i = 0; i < n / qk_legacy; ++i, src += qk_legacy) {
    int sum;
    const float d = quantize_block_x86(src, b[i].qs, &sum);
    b[i].d = f32_to_fp16(d);
    b[i].s = f32_to_fp16(d * float(sum));
  }
}

quantize_row_fn activation_quantizer(dtype dot_type) {
  switch (dot_type) {
    case dtype::q8_0:
      return quantize_row_q8_0_x86;
    case dtype::q8_1:
      return quantize_row_q8_1_x86;
    default:
      return type_info(dot_type).quantize_row;
  }
}

}  // namespace glia::quant
