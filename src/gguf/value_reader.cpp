#include "gguf/value_reader.h"

#include <bit>


namespace glia::gguf::detail {

namespace {

// Smallest encoding of one element of `t`: a bound on how many elements the remaining bytes can hold.
uint64_t min_encoded_size(value_type t) {
  switch (t) {
    case value_type::u8: case value_type::i8: case value_type::boolean: return 1;
    case value_type::u16: case value_type::i16: return 2;
    case value_type::u32: case value_type::i32: case value_type::f32: return 4;
    case value_type::u64: case value_type::i64: case value_type::f64: return 8;
    case value_type::string: return 8;   // u64 length
    case value_type::array: return 12;   // u32 element type + u64 length
  }
  return 1;
}

}  // namespace

std::string location::str() const {
  if (element < 0) return std::string(where);
  return fmt::format("{} element {}", where, element);
}

error value_reader::truncated(const location& loc, std::string_view field, uint64_t need) const {
  return make_error("{}: unexpected end of file reading {} at offset {} (needs {} bytes, {} left of {})",
                    loc.str(), field, cur_.pos(), need, cur_.remaining(), cur_.size());
}

status value_reader::read_string(std::string& out, const location& loc) {
  uint64_t len = 0;
  if (!cur_.read_le(len)) return truncated(loc, "the string length", 8);
  if (len > limits_.max_string_bytes)
    return make_error("{}: string length {} exceeds the limit {}", loc.str(), len, limits_.max_string_bytes);
  const uint8_t* p = nullptr;
  if (!cur_.take(len, p))
    return make_error("{}: string length {} at offset {} exceeds the {} bytes left in the file", loc.str(), len,
                      cur_.pos() - 8, cur_.remaining());
  // Metadata strings are bytes: invalid UTF-8 is kept as is.
  out.assign(reinterpret_cast<const char*>(p), size_t(len));
  return {};
}

status value_reader::read_value(value_type type, uint32_t nesting, const location& loc, value& out) {
  out.type = type;
  switch (type) {
    case value_type::u8: {
      uint8_t v;
      if (!cur_.read_le(v)) return truncated(loc, "a u8 value", 1);
      out.data = uint64_t(v);
      return {};
    }
    case value_type::i8: {
      int8_t v;
      if (!cur_.read_le(v)) return truncated(loc, "an i8 value", 1);
      out.data = int64_t(v);
      return {};
    }
    case value_type::u16: {
      uint16_t v;
      if (!cur_.read_le(v)) return truncated(loc, "a u16 value", 2);
      out.data = uint64_t(v);
      return {};
    }
    case value_type::i16: {
      int16_t v;
      if (!cur_.read_le(v)) return truncated(loc, "an i16 value", 2);
      out.data = int64_t(v);
      return {};
    }
    case value_type::u32: {
      uint32_t v;
      if (!cur_.read_le(v)) return truncated(loc, "a u32 value", 4);
      out.data = uint64_t(v);
      return {};
    }
    case value_type::i32: {
      int32_t v;
      if (!cur_.read_le(v)) return truncated(loc, "an i32 value", 4);
      out.data = int64_t(v);
      return {};
    }
    case value_type::u64: {
      uint64_t v;
      if (!cur_.read_le(v)) return truncated(loc, "a u64 value", 8);
      out.data = v;
      return {};
    }
    case value_type::i64: {
      int64_t v;
      if (!cur_.read_le(v)) return truncated(loc, "an i64 value", 8);
      out.data = v;
      return {};
    }
    case value_type::f32: {
      uint32_t bits;
      if (!cur_.read_le(bits)) return truncated(loc, "an f32 value", 4);
      out.data = double(std::bit_cast<float>(bits));
      return {};
    }
    case value_type::f64: {
      uint64_t bits;
      if (!cur_.read_le(bits)) return truncated(loc, "an f64 value", 8);
      out.data = std::bit_cast<double>(bits);
      return {};
    }
    case value_type::boolean: {
      uint8_t v;
      if (!cur_.read_le(v)) return truncated(loc, "a bool value", 1);
      if (v > 1) return make_error("{}: bool value {} at offset {} is neither 0 nor 1", loc.str(), v, cur_.pos() - 1);
      out.data = v == 1;
      return {};
    }
    case value_type::string: {
      std::string s;
      GLIA_TRY(read_string(s, loc));
      out.data = std::move(s);
      return {};
    }
    case value_type::array:
      return read_array(nesting + 1, loc, out);
  }
  return make_error("{}: unknown value type {} (valid 0..{})", loc.str(), uint32_t(type), max_value_type);
}

status value_reader::read_array(uint32_t level, const location& loc, value& out) {
  if (level > limits_.max_array_depth)
    return make_error("{}: arrays nested {} deep exceed the limit {}", loc.str(), level, limits_.max_array_depth);
  uint32_t elem_type = 0;
  if (!cur_.read_le(elem_type)) return truncated(loc, "the array element type", 4);
  if (elem_type > max_value_type)
    return make_error("{}: unknown array element type {} (valid 0..{})", loc.str(), elem_type, max_value_type);
  out.elem_type = value_type(elem_type);
  uint64_t n = 0;
  if (!cur_.read_le(n)) return truncated(loc, "the array length", 8);
  if (n > limits_.max_array_elems)
    return make_error("{}: array length {} exceeds the limit {}", loc.str(), n, limits_.max_array_elems);
  uint64_t min_size = min_encoded_size(out.elem_type);
  if (n > cur_.remaining() / min_size)
    return make_error("{}: array length {} ({} elements of at least {} bytes) exceeds the {} bytes left in the file",
                      loc.str(), n, value_type_name(out.elem_type), min_size, cur_.remaining());

  std::vector<value> elems(static_cast<size_t>(n));
  // Elements are named by index under the array's own name ("key 'x' element 3 element 0").
  const std::string base = loc.str();
  for (uint64_t i = 0; i < n; ++i) GLIA_TRY(read_value(out.elem_type, level, location{base, int64_t(i)}, elems[i]));
  out.data = std::move(elems);
  return {};
}

}  // namespace glia::gguf::detail
