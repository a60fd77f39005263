// The float-type matmul kernels (mm_float_kernels.h) compiled for AVX2.
#include "backend/cpu/mm_float_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

namespace glia::cpu {

std::span<const mm_kernel> avx2_mm_float() { return float_kernels; }

}  // namespace glia::cpu
