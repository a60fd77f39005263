// API-key check for `--api-key`: "Authorization: Bearer KEY", compared in constant time so response
// timing does not reveal how many leading characters of a guess were right.
#pragma once

#include <string_view>

namespace glia::server {

bool constant_time_equal(std::string_view a, std::string_view b);
// True when `authorization_header` is "Bearer <expected>" (scheme case-insensitive).
bool bearer_matches(std::string_view authorization_header, std::string_view expected);

}  // namespace glia::server
