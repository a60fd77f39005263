// The machine's memory read bandwidth, measured: the ceiling that token generation (which streams
// every weight once per token) can approach. Benchmarks report decode speed as a fraction of it.
#pragma once

#include <cstddef>

#include "core/status.h"

namespace glia {

struct bandwidth_options {
  int n_threads = 1;                    // readers running at once (<= 0: one per hardware thread)
  size_t buffer_bytes = size_t(1) << 30;  // far larger than any last-level cache
  int n_passes = 5;                     // the best pass is reported
};

struct bandwidth_result {
  double bytes_per_second = 0.0;  // best pass: buffer_bytes / wall time of the pass
  double worst_bytes_per_second = 0.0;
  size_t buffer_bytes = 0;
  int n_threads = 0;
  int n_passes = 0;
  bool used_avx2 = false;  // 256-bit loads (else the portable 64-bit loop)
};

// Streams through a buffer of `buffer_bytes` with n_threads threads (each reads a contiguous
// slice, summing 256-bit loads so that the loop is limited by memory, not by instructions), once
// per pass, and keeps the fastest pass. The buffer is written first (every page touched by the
// thread that later reads it). Errors: buffer below 1 MiB, passes < 1, allocation failure.
result<bandwidth_result> measure_read_bandwidth(const bandwidth_options& opts);

}  // namespace glia
