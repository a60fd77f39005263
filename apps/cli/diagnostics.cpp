#include <fmt/core.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common_options.h"

namespace glia::cli {

static bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    fmt::print(stderr, "error: cannot write {}\n", path);
    return false;
  }
  return true;
}

// Whether `path` can be written (an existing file writable, or its folder for a new one).
static bool can_write(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    errno = EISDIR;
    return false;
  }
  if (::access(path.c_str(), F_OK) == 0) return ::access(path.c_str(), W_OK) == 0;
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ::access(dir.empty() ? "." : dir.c_str(), W_OK) == 0;
}

bool diagnostics_options::start(session& s) const {
  for (const std::string* path : {&profile_json, &trace})
    if (!path->empty() && !can_write(*path)) {
      fmt::print(stderr, "error: cannot write {}: {}\n", *path, std::strerror(errno));
      return false;
    }
  if (!dump_pattern.empty()) {
    // Made now, so that a folder that cannot be is said before the run rather than after it.
    std::error_code ec;
    std::filesystem::create_directories(dump_dir, ec);
    if (!ec && !std::filesystem::is_directory(dump_dir, ec)) ec = std::make_error_code(std::errc::not_a_directory);
    if (!ec && ::access(dump_dir.c_str(), W_OK) != 0) ec = std::error_code(errno, std::generic_category());
    if (ec) {
      fmt::print(stderr, "error: --dump-dir {}: {}\n", dump_dir, ec.message());
      return false;
    }
  }
  if (profile || !profile_json.empty() || !trace.empty()) s.enable_profiling();
  if (!dump_pattern.empty()) s.enable_tensor_dump(dump_pattern, dump_dir, dump_positions);
  return true;
}

bool diagnostics_options::finish(session& s) const {
  bool ok = true;
  if (profile) fmt::print(stderr, "\n{}", s.profile_table());
  if (!profile_json.empty()) ok &= write_text(profile_json, s.profile_json());
  if (!trace.empty()) ok &= write_text(trace, s.profile_trace());
  if (!dump_pattern.empty()) {
    auto stats = s.finish_tensor_dump();
    if (!stats) {
      fmt::print(stderr, "error: {}\n", stats.message());
      return false;
    }
    fmt::print(stderr, "tensor dump in {}/ (index.json):\n{}", dump_dir, *stats);
  }
  return ok;
}

}  // namespace glia::cli
