// Names and keys come from untrusted files; error messages must stay one readable line.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace glia::gguf::detail {

// Escapes control bytes and shortens very long text so that it can be embedded in a message.
inline std::string printable(std::string_view s) {
  constexpr size_t max_shown = 120;
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_shown; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += char(c);
  }
  if (s.size() > max_shown) out += fmt::format("...({} bytes)", s.size());
  return out;
}

}  // namespace glia::gguf::detail
