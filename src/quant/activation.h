// Activation quantizers as ggml's x86 CPU backend runs them before a dot product. The reference
// engine's goldens were computed on an AVX2 machine, where Q8_0 and Q8_1 activations are made by
// SIMD code that differs from the reference quantizers in two ways: the inverse scale is 127/amax
// (not 1/(amax/127)) and rounding is to nearest even (not roundf's ties away from zero). Q8_K,
// F16 and BF16 activations are the table's quantize_row as is.
#pragma once

#include <cstdint>

#include "quant/types.h"

namespace glia::quant {

void quantize_row_q8_0_x86(const float* src, void* dst, int64_t n);
void quantize_row_q8_1_x86(const float* src, void* dst, int64_t n);

// The quantizer that turns an activation row into `dot_type` exactly as the reference engine's
// x86 CPU backend does; for types other than Q8_0/Q8_1 this is the table's quantize_row.
quantize_row_fn activation_quantizer(dtype dot_type);

}  // namespace glia::quant
