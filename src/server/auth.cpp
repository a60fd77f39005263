#include "server/auth.h"

#include <cctype>
#include <cstddef>

namespace glia::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the full length of the expected key whatever the guess is; the length difference is folded
  // into the result instead of returning early.
  unsigned diff = unsigned(a.size() ^ b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= unsigned(x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

bool bearer_matches(std::string_view h, std::string_view expected) {
  constexpr std::string_view scheme = "bearer ";
  if (h.size() < scheme.size()) return constant_time_equal(std::string_view(), expected) && false;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(h[i])) != scheme[i]) return false;
  std::string_view key = h.substr(scheme.size());
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
  return constant_time_equal(key, expected);
}

}  // namespace glia::server
