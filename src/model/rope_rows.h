// The two row orders of Q and K projections. Hugging Face Llama checkpoints rotate the two halves
// of each head (pairs i and i + d/2, "NeoX" style); llama.cpp's converter reorders every head's rows
// so that GGUF "llama" files rotate adjacent pairs (2i, 2i + 1). glia runs a folder's rows as they
// are, with NeoX rotation (no copy), and interleaves them only when writing a GGUF.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace glia {

// Metadata key of a file whose llama Q/K rows are in the checkpoint's (half-split) order.
inline constexpr std::string_view key_rope_checkpoint_order = "glia.rope.checkpoint_order";

// Rows of `in` (n_rows rows, n_heads heads) from half-split into interleaved order: out row
// h*d + 2i + j is in row h*d + j*d/2 + i. A vector (a bias) is rows of one element.
status interleave_rope_rows(std::span<const uint8_t> in, std::vector<uint8_t>& out, int64_t n_rows, int64_t n_heads,
                            std::string_view name);

}  // namespace glia
