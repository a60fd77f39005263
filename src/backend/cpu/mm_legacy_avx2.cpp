// The legacy matmul kernels (mm_legacy_kernels.h) compiled for AVX2.
#include "backend/cpu/mm_legacy_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

namespace glia::cpu {

std::span<const mm_kernel> avx2_mm_legacy(bool amd_form) {
  if (amd_form) return legacy_kernels<single_panels>;
  return legacy_kernels<single_spread>;
}

}  // namespace glia::cpu
