// The attend kernel (attention_kernels.h) compiled for AVX2: 8 lanes.
#include "backend/cpu/attention_kernels.h"
// (the kernels header first: it must not see anything compiled differently before it.)

namespace glia::cpu {

attend_fn avx2_attend() { return attend<f32x8>; }

}  // namespace glia::cpu
