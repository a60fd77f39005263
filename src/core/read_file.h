// A whole file's bytes as a string: regular files (sized up front, read in large chunks, so a
// multi-GB weights file reads at disk speed) and pipes alike. Errors name the path and the cause.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace glia {

// progress(done, total) follows the read of a regular file (chunks of 64 MiB), for a progress bar.
result<std::string> read_whole_file(const std::string& path,
                                    const std::function<void(uint64_t done, uint64_t total)>& progress = {});

// The regular files (through symlinks) of `dir` whose names end in `extension`, sorted; none when
// `dir` is not a folder.
std::vector<std::filesystem::path> files_with_extension(const std::filesystem::path& dir, std::string_view extension);

}  // namespace glia
