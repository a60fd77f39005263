#include "core/status.h"

#include <algorithm>

namespace glia {

std::string one_line(std::string message) {
  const auto is_control = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || c == 0x7f;
  };
  if (std::none_of(message.begin(), message.end(), is_control)) return message;
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (const char ch : message) {
    if (!is_control(ch)) {
      out.push_back(ch);
      continue;
    }
    const auto c = static_cast<unsigned char>(ch);
    out += {'\\', 'x', hex[c >> 4], hex[c & 15]};
  }
  return out;
}

}  // namespace glia
