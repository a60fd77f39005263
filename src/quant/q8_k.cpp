// Q8_K: the activation format of k-quant and IQ4_XS dot products. Must match ggml's
// quantize_row_q8_K_ref exactly (x86 builds of ggml use it as is), since the goldens were computed
// with activations rounded this way.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_types.h"
#include "quant/ref_kernels.h"

namespace glia::quant {

void dequantize_row_q8_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const block_q8_k*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i, dst += qk_k)
    for (int e = 0; e < qk_k; ++e) dst[e] = b[i].d * float(b[i].qs[e]);
}

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<block_q8_k*>(dst);
  for (int64_t i = 0; i < n / qk_k; ++i, src += qk_k) {
    float amax = 0, peak = 0;
    for (int e = 0; e < qk_k; ++e) {
      if (std::fabs(src[e]) > amax) {
        amax = std::fabs(src[e]);
        peak = src[e];
      }
    }
    if (amax == 0) {
      std::memset(&b[i], 0, sizeof(b[i]));
      continue;
    }
    // The signed peak maps to -127 (not -128) so that every code is in [-127, 127].
    const float iscale = -127.0f / peak;
    for (int e = 0; e < qk_k; ++e) b[i].qs[e] = int8_t(std::min(127, nearest_int(iscale * src[e])));
    for (int g = 0; g < qk_k / 16; ++g) {
      int sum = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) sum += b[i].qs[e];
      b[i].bsums[g] = int16_t(sum);
    }
    b[i].d = 1 / iscale;
  }
}

// Q8_K x Q8_K has no use in ggml; it is defined so every row of the table has a dot product.
float vec_dot_q8_k_q8_k(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const block_q8_k*>(w);
  const auto* y = static_cast<const block_q8_k*>(a);
  float sum = 0;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    int isum = 0;
    for (int e = 0; e < qk_k; ++e) isum += x[i].qs[e] * y[i].qs[e];
    sum += x[i].d * y[i].d * float(isum);
  }
  return sum;
}

}  // namespace glia::quant
