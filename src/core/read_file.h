// A whole file's bytes as a string: regular files (sized up front, read in large chunks, so a
// multi-GB weights file reads at disk speed) and pipes alike. Errors name the path and the cause.
#pragma once

#include <string>

#include "core/status.h"

namespace glia {

result<std::string> read_whole_file(const std::string& path);

}  // namespace glia
