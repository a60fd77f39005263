// What the operating system says about memory: how much a new allocation can still get, and how
// much this process holds resident. Used to refuse a KV cache that cannot fit up front, with the
// numbers, instead of being killed by the OOM killer later.
#pragma once

#include <cstdint>
#include <optional>

namespace glia {

// MemAvailable from /proc/meminfo, capped by the cgroup memory limit when one is set.
std::optional<uint64_t> available_memory_bytes();
// VmRSS of this process.
std::optional<uint64_t> resident_memory_bytes();

}  // namespace glia
