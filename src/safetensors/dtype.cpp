// The element types: one table of spec name and width, and the byte count of a shape.
#include <fmt/ranges.h>

#include <array>
#include <limits>

#include "safetensors/safetensors.h"

namespace glia::safetensors {

namespace {

struct dtype_row {
  dtype type;
  std::string_view name;
  size_t bits;
};

// In enum order, so that a row is found by index.
constexpr std::array<dtype_row, 20> dtype_table = {{
    {dtype::f64, "F64", 64},
    {dtype::f32, "F32", 32},
    {dtype::f16, "F16", 16},
    {dtype::bf16, "BF16", 16},
    {dtype::i64, "I64", 64},
    {dtype::i32, "I32", 32},
    {dtype::i16, "I16", 16},
    {dtype::i8, "I8", 8},
    {dtype::u8, "U8", 8},
    {dtype::boolean, "BOOL", 8},
    {dtype::f8_e4m3, "F8_E4M3", 8},
    {dtype::f8_e5m2, "F8_E5M2", 8},
    {dtype::u64, "U64", 64},
    {dtype::u32, "U32", 32},
    {dtype::u16, "U16", 16},
    {dtype::f8_e8m0, "F8_E8M0", 8},
    {dtype::c64, "C64", 64},
    {dtype::f4, "F4", 4},
    {dtype::f6_e2m3, "F6_E2M3", 6},
    {dtype::f6_e3m2, "F6_E3M2", 6},
}};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < dtype_table.size(); ++i)
    if (size_t(dtype_table[i].type) != i) return false;
  return true;
}
static_assert(table_in_enum_order());

const dtype_row& row(dtype t) { return dtype_table.at(size_t(t)); }

}  // namespace

std::string_view dtype_name(dtype t) { return row(t).name; }

size_t dtype_bits(dtype t) { return row(t).bits; }

size_t dtype_size(dtype t) { return row(t).bits % 8 == 0 ? row(t).bits / 8 : 0; }

result<dtype> parse_dtype(std::string_view name) {
  for (const dtype_row& r : dtype_table)
    if (r.name == name) return r.type;
  return make_error("unknown dtype \"{}\"", name);
}

result<uint64_t> tensor_bytes(dtype t, std::span<const int64_t> shape) {
  // Zero dims are skipped while checking for overflow: a shape whose other dims overflow is refused
  // even when it holds no element, so that no caller computing strides from it can overflow either.
  constexpr uint64_t max_elements = uint64_t(std::numeric_limits<int64_t>::max());
  uint64_t product = 1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) return make_error("shape [{}]: dim {} is negative", fmt::join(shape, ", "), i);
    if (shape[i] == 0) {
      has_zero = true;
      continue;
    }
    if (__builtin_mul_overflow(product, uint64_t(shape[i]), &product) || product > max_elements)
      return make_error("shape [{}] has more than 2^63 - 1 elements", fmt::join(shape, ", "));
  }
  const uint64_t n_elements = has_zero ? 0 : product;
  uint64_t bits = 0;
  if (__builtin_mul_overflow(n_elements, uint64_t(dtype_bits(t)), &bits))
    return make_error("shape [{}] of {} has more than 2^64 - 1 bits", fmt::join(shape, ", "), dtype_name(t));
  if (bits % 8 != 0)
    return make_error("shape [{}] of {} is {} bits, not a whole number of bytes", fmt::join(shape, ", "),
                      dtype_name(t), bits);
  return bits / 8;
}

int64_t tensor_info::n_elements() const {
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;
  return n;
}

}  // namespace glia::safetensors
