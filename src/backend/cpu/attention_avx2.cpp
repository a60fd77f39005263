// The attend kernel (attention_kernels.h) compiled for AVX2: 8 lanes.
#include "backend/cpu/attention_vectors_x86.h"
// (the vectors' header first: it must not see anything compiled differently before it.)
#include "backend/cpu/attention_kernels.h"

namespace glia::cpu {

attend_fn avx2_attend() { return attend<f32x8>; }

}  // namespace glia::cpu
