// The legacy matmul kernels (mm_legacy_kernels.h) compiled for AVX-512 VNNI.
#include "backend/cpu/mm_legacy_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

namespace glia::cpu {

std::span<const mm_kernel> avx512vnni_mm_legacy(bool q4_0_decode_pairs, bool amd_form) {
  if (amd_form) return q4_0_decode_pairs ? legacy_kernels<panel_pairs> : legacy_kernels<single_panels>;
  return q4_0_decode_pairs ? legacy_kernels<pairs_spread> : legacy_kernels<single_spread>;
}

}  // namespace glia::cpu
