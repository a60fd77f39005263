#include <fmt/core.h>

#include <cstdio>
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
