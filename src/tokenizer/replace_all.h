// Literal (not regex) substring replacement, shared by the normalizers, the decoders, SentencePiece's
// space marks and the pre-tokenizer pattern rewrites.
#pragma once

#include <string>
#include <string_view>

namespace glia::tok {

// Every non-overlapping occurrence of `from`, left to right, replaced by `to`; an empty `from`
// matches nothing.
inline std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

// The same in place; `s` is not copied where `from` does not occur (the common case for the
// per-token decoder rules).
inline void replace_all_in_place(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  s = replace_all(s, from, to);
}

}  // namespace glia::tok
