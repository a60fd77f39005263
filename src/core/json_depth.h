// Deepest bracket nesting of JSON text, brackets inside strings not counted. nlohmann::json parses
// iteratively but copies and compares recursively, so callers refuse text nested past their limit
// before parsing it rather than risk the stack later.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace glia {

// Configuration files (config.json, tokenizer_config.json, ...) nest a few levels; deeper text is refused.
inline constexpr size_t max_config_json_depth = 64;

inline size_t json_nesting_depth(std::string_view s) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace glia
