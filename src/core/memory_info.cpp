#include "core/memory_info.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace glia {
namespace {

std::optional<uint64_t> read_kib_field(const char* path, const std::string& field) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) != 0) continue;
    std::istringstream ss(line.substr(field.size()));
    uint64_t kib = 0;
    if (ss >> kib) return kib * 1024;
  }
  return std::nullopt;
}

std::optional<uint64_t> cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string v;
    if (in >> v && v != "max") {
      try {
        const uint64_t limit = std::stoull(v);
        if (limit < (uint64_t(1) << 60)) return limit;
      } catch (...) {
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> available_memory_bytes() {
  auto avail = read_kib_field("/proc/meminfo", "MemAvailable:");
  auto limit = cgroup_limit();
  if (avail && limit) return std::min(*avail, *limit);
  return avail ? avail : limit;
}

std::optional<uint64_t> resident_memory_bytes() { return read_kib_field("/proc/self/status", "VmRSS:"); }

}  // namespace glia
