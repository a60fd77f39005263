// Shape and type rules shared by the reader and the writer: a tensor is 1..4 dims of at least one
// element each, of a type the engine implements, with whole blocks per row and a byte size that
// fits in 64 bits.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.h"

namespace glia::gguf::detail {

inline constexpr uint32_t max_dims = 4;

// Validates `dims` (ggml order, ne[0] first) and `type` for the tensor called `name` and returns
// the size of its data in bytes. Messages name the tensor, the offending field, its value and the limit.
result<uint64_t> tensor_byte_size(std::string_view name, uint32_t type, std::span<const int64_t> dims);

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Rounds `v` up to a multiple of the power of two `alignment`; the caller ensures no overflow.
inline uint64_t align_up(uint64_t v, uint64_t alignment) { return (v + alignment - 1) & ~(alignment - 1); }

}  // namespace glia::gguf::detail
