// The k-quant matmul kernels (mm_kquants_kernels.h, mm_kquants_low_kernels.h) compiled for AVX2.
#include "backend/cpu/mm_kquants_low_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

namespace glia::cpu {

std::span<const mm_kernel> avx2_mm_kquants(bool amd_form) {
  if (amd_form) return kquant_kernels<single_panels>;
  return kquant_kernels<single_spread>;
}

}  // namespace glia::cpu
