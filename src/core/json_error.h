// A JSON parse failure in the parser's own words: where and why ("parse error at line 1, column 2:
// syntax error while parsing value - invalid literal; last read: 'x'"), without nlohmann's
// "[json.exception.parse_error.101] " tag, and at most 240 characters (its "last read" quotes the
// whole token, which may be most of the text).
#pragma once

#include <string>
#include <string_view>

namespace glia {

inline std::string json_error_reason(std::string_view what) {
  if (const size_t tag_end = what.find("] "); what.starts_with("[json.exception.") && tag_end != what.npos) what.remove_prefix(tag_end + 2);
  constexpr size_t shown = 240;
  return std::string(what.substr(0, shown)) + (what.size() > shown ? "..." : "");
}

}  // namespace glia
