// Strict UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF), so a body
// with invalid bytes gets a 400 that says so instead of a generic JSON error.
#pragma once

#include <cstddef>
#include <string_view>

namespace glia::server {

// Offset of the first invalid byte, or npos when `s` is valid UTF-8.
size_t find_invalid_utf8(std::string_view s);

}  // namespace glia::server
