// Deepest bracket nesting of JSON text, brackets inside strings not counted. nlohmann::json parses
// iteratively but copies and compares recursively, so callers refuse text nested past their limit
// before parsing it rather than risk the stack later.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
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

// nlohmann stops reading at a NUL byte, so text after one would be ignored where Python's json
// refuses it: the offset of the first NUL, if any, for callers to refuse the text.
inline std::optional<size_t> json_nul_byte(std::string_view s) {
  const size_t at = s.find('\0');
  return at == std::string_view::npos ? std::nullopt : std::optional<size_t>(at);
}

}  // namespace glia
