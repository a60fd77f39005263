// Typed access to metadata values. Unsigned types are stored as uint64_t, signed ones as int64_t,
// both float widths as double.
#include "gguf/gguf.h"

namespace glia::gguf {

std::string_view value_type_name(value_type t) {
  switch (t) {
    case value_type::u8: return "u8";
    case value_type::i8: return "i8";
    case value_type::u16: return "u16";
    case value_type::i16: return "i16";
    case value_type::u32: return "u32";
    case value_type::i32: return "i32";
    case value_type::f32: return "f32";
    case value_type::boolean: return "bool";
    case value_type::string: return "string";
    case value_type::array: return "array";
    case value_type::u64: return "u64";
    case value_type::i64: return "i64";
    case value_type::f64: return "f64";
  }
  return "unknown";
}

bool value::is_integer() const {
  switch (type) {
    case value_type::u8: case value_type::i8: case value_type::u16: case value_type::i16:
    case value_type::u32: case value_type::i32: case value_type::u64: case value_type::i64:
      return true;
    default:
      return false;
  }
}

bool value::is_float() const { return type == value_type::f32 || type == value_type::f64; }

std::optional<int64_t> value::as_int() const {
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&data)) {
    if (*u > uint64_t(INT64_MAX)) return std::nullopt;
    return int64_t(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&data)) return *i;
  return std::nullopt;
}

std::optional<double> value::as_float() const {
  if (is_float()) {
    if (const auto* d = std::get_if<double>(&data)) return *d;
    return std::nullopt;
  }
  if (!is_integer()) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&data)) return double(*u);
  if (const auto* i = std::get_if<int64_t>(&data)) return double(*i);
  return std::nullopt;
}

std::optional<bool> value::as_bool() const {
  if (type != value_type::boolean) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&data)) return *b;
  return std::nullopt;
}

const std::string* value::as_string() const {
  return type == value_type::string ? std::get_if<std::string>(&data) : nullptr;
}

const std::vector<value>* value::as_array() const {
  return type == value_type::array ? std::get_if<std::vector<value>>(&data) : nullptr;
}

}  // namespace glia::gguf
