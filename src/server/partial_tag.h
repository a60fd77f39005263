// Streamed replies are read by tags (<tool_call>, </think>, ...) that a piece boundary may cut: the
// end of what has come so far may be the start of one, and must be held until the next piece decides.
#pragma once

#include <algorithm>
#include <string_view>

namespace glia::server {

// Where the longest trailing part of `text` (not before `from`) that is a proper prefix of `tag`
// starts; text.size() when there is none.
inline size_t partial_tag_at(std::string_view text, std::string_view tag, size_t from = 0) {
  const size_t room = text.size() - std::min(from, text.size());
  for (size_t n = std::min(tag.size() - 1, room); n > 0; --n)
    if (tag.starts_with(text.substr(text.size() - n))) return text.size() - n;
  return text.size();
}

}  // namespace glia::server
