// --check-tensors: a scan of every weight for NaN and infinity before a model is used. A corrupt or
// badly converted file otherwise shows up only as a non-finite activation somewhere in the forward,
// far from the tensor at fault. Every row of every tensor is dequantized with the type table's
// reference routine, so quantization scales are covered too: a NaN or infinite block scale turns
// the block's values non-finite (an infinite scale times a zero quant is 0 * inf = NaN).
#pragma once

#include "core/status.h"
#include "gguf/gguf.h"

namespace glia {

// Scans the tensors in file order and returns the first non-finite value as
// "tensor NAME: non-finite value (nan|inf|-inf) at row R, column C", where C indexes ne[0] (the
// contiguous dimension) and R counts rows of ne[0] elements over ne[1..3] (ggml order, ne[1] fastest).
// n_threads > 1 scans rows in parallel; the tensor, row and column reported are the same for any
// thread count. Errors are also returned for a tensor whose type has no dequantize routine.
status check_tensors(const gguf::file& f, int n_threads = 1);

}  // namespace glia
