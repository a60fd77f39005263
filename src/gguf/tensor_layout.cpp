#include "gguf/tensor_layout.h"

#include <fmt/ranges.h>

#include "quant/types.h"

namespace glia::gguf::detail {

namespace {

// quant/types.h spells ids it does not know as "type <id>" (or "unknown type" once its cache of
// such names is full); any other name is a real ggml type that the engine does not implement.
bool is_known_ggml_type(uint32_t id) {
  std::string_view name = glia::type_name(id);
  return !name.empty() && !name.starts_with("type ") && !name.starts_with("unknown");
}

}  // namespace

result<uint64_t> tensor_byte_size(std::string_view name, uint32_t type, std::span<const int64_t> dims) {
  if (dims.empty() || dims.size() > max_dims)
    return make_error("tensor '{}': n_dims {} is outside the supported range 1..{}", name, dims.size(), max_dims);
  // A zero-length dimension is refused (llama.cpp tolerates it): an empty weight has no use in a
  // model, and refusing it keeps every tensor's data a non-empty range for the overlap checks.
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 1) return make_error("tensor '{}': ne[{}] = {} is below the minimum 1", name, i, dims[i]);
  }
  int64_t n_elements = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n_elements, d, &n_elements))
      return make_error("tensor '{}': dims [{}] have more elements than int64 can count (max {})", name,
                        fmt::join(dims, ", "), INT64_MAX);
  }

  const type_traits* traits = find_type(type);
  if (traits == nullptr) {
    if (!is_known_ggml_type(type)) return make_error("tensor '{}': unknown type id {}", name, type);
    // Spelled exactly this way (no quotes) because tools and users grep for it.
    return make_error("tensor {}: type {} is not supported", name, glia::type_name(type));
  }
  if (dims[0] % traits->block_elems != 0)
    return make_error("tensor '{}': row length ne[0] = {} is not a multiple of the {} block size {}", name,
                      dims[0], traits->name, traits->block_elems);

  uint64_t n_bytes = uint64_t(dims[0] / traits->block_elems);
  bool overflow = __builtin_mul_overflow(n_bytes, uint64_t(traits->block_bytes), &n_bytes);
  for (size_t i = 1; i < dims.size(); ++i) overflow |= __builtin_mul_overflow(n_bytes, uint64_t(dims[i]), &n_bytes);
  if (overflow)
    return make_error("tensor '{}': {} data of dims [{}] is larger than 2^64 bytes", name, traits->name,
                      fmt::join(dims, ", "));
  return n_bytes;
}

}  // namespace glia::gguf::detail
