#include "core/status.h"

namespace glia {

std::string one_line(std::string message) {
  const auto is_control = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || c == 0x7f;
  };
  size_t n_control = 0;
  for (const char ch : message) n_control += is_control(ch);
  if (n_control == 0) return message;
  constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(message.size() + 3 * n_control);
  for (const char ch : message) {
    if (!is_control(ch)) {
      out.push_back(ch);
      continue;
    }
    const auto c = static_cast<unsigned char>(ch);
    out.push_back('\\');
    out.push_back('x');
    out.push_back(hex[c >> 4]);
    out.push_back(hex[c & 15]);
  }
  return out;
}

}  // namespace glia
