// Names and keys come from untrusted files; error messages must stay one readable line.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace glia::gguf::detail {

// Shortens very long text and escapes its control bytes (one_line) so that it can be embedded in a
// message.
inline std::string printable(std::string_view s) {
  constexpr size_t max_shown = 120;
  std::string out = one_line(std::string(s.substr(0, max_shown)));
  if (s.size() > max_shown) out += fmt::format("...({} bytes)", s.size());
  return out;
}

}  // namespace glia::gguf::detail
