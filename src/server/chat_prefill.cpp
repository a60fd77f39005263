#include "server/chat_prefill.h"

#include <string_view>

namespace glia::server {

std::optional<size_t> continued_message_end(const std::string& rendered, const std::string& message) {
  constexpr const char* space = " \t\n\r\f\v";
  const size_t first = message.find_first_not_of(space);
  if (first == std::string::npos) return std::nullopt;
  const size_t last = message.find_last_not_of(space);
  const std::string_view lstripped = std::string_view(message).substr(first);
  const std::string_view stripped = lstripped.substr(0, last - first + 1);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos) return std::nullopt;
  if (std::string_view(rendered).substr(at, lstripped.size()) == message) return at + lstripped.size();
  return at + stripped.size();
}

}  // namespace glia::server
