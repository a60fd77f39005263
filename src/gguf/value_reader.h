// Reads metadata strings and values (scalars, strings and arbitrarily nested arrays) from a cursor.
// Every length is checked against the limits and against the bytes left before anything is
// allocated, so a forged count cannot make the reader reserve more than the file could hold.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "gguf/byte_cursor.h"
#include "gguf/gguf.h"

namespace glia::gguf::detail {

inline constexpr uint32_t max_value_type = uint32_t(value_type::f64);

// Where a value sits, for messages: "key 'general.name'" plus an optional array element index.
struct location {
  std::string_view where;
  int64_t element = -1;
  std::string str() const;
};

class value_reader {
 public:
  value_reader(byte_cursor& cur, const read_limits& limits) : cur_(cur), limits_(limits) {}

  status read_string(std::string& out, const location& loc);
  // Reads a value of `type`; `nesting` is the number of arrays that enclose it.
  status read_value(value_type type, uint32_t nesting, const location& loc, value& out);

 private:
  status read_array(uint32_t nesting, const location& loc, value& out);
  error truncated(const location& loc, std::string_view field, uint64_t need) const;

  byte_cursor& cur_;
  const read_limits& limits_;
};

}  // namespace glia::gguf::detail
