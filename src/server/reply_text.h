// Small pieces of reading a reply's text (tool calls, reasoning): JSON's whitespace, and tags
// (<tool_call>, </think>, ...) that a piece boundary may cut: the end of what has come so far may be
// the start of one, and must be held until the next piece decides.
#pragma once

#include <algorithm>
#include <string_view>

namespace glia::server {

// JSON's whitespace, which is also what the call and reasoning formats put around their tags.
inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The first position at or after i that is not whitespace (s.size() when none), and s without its
// trailing whitespace.
inline size_t skip_blanks(std::string_view s, size_t i = 0) {
  while (i < s.size() && is_blank(s[i])) ++i;
  return i;
}
inline std::string_view trim_end(std::string_view s) {
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// Where the longest trailing part of `text` (not before `from`) that is a proper prefix of `tag`
// starts; text.size() when there is none.
inline size_t partial_tag_at(std::string_view text, std::string_view tag, size_t from = 0) {
  const size_t room = text.size() - std::min(from, text.size());
  for (size_t n = std::min(tag.size() - 1, room); n > 0; --n)
    if (tag.starts_with(text.substr(text.size() - n))) return text.size() - n;
  return text.size();
}

}  // namespace glia::server
