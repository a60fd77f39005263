// The legacy matmul kernels (mm_legacy_kernels.h) compiled for AVX-512 VNNI.
#include "backend/cpu/mm_legacy_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

namespace glia::cpu {

std::span<const mm_kernel> avx512vnni_mm_legacy(bool q4_0_decode_pairs, bool amd_form) {
  // One return per table (clang 14 cannot convert `c ? array : array` of a variable template).
  if (amd_form) {
    if (q4_0_decode_pairs) return legacy_kernels<panel_pairs>;
    return legacy_kernels<single_panels>;
  }
  if (q4_0_decode_pairs) return legacy_kernels<pairs_spread>;
  return legacy_kernels<single_spread>;
}

}  // namespace glia::cpu
