// The machine's memory read bandwidth, measured: the ceiling that token generation (which streams
// every weight once per token) can approach. Benchmarks report decode speed as a fraction of it.
#pragma once

#include <cstddef>
#include <memory>

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

// The probe's buffer and readers, kept for passes spread over a run: on a shared host the read
// bandwidth moves from second to second, so `glia bench` also times passes between its decode
// repetitions to compare decode with what the memory gave at about the same time.
class read_probe {
 public:
  // Allocates buffer_bytes (n_passes is not used) and writes it (every page touched by the thread
  // that later reads it). Errors: buffer below 1 MiB or too small for the threads, allocation.
  static result<read_probe> create(const bandwidth_options& opts);
  read_probe(read_probe&&) noexcept;
  read_probe& operator=(read_probe&&) noexcept;
  ~read_probe();

  // One timed pass: every thread reads its contiguous slice, summing 256-bit loads so that the
  // loop is limited by memory, not by instructions. Bytes per second; an error if the sums differ
  // from what the buffer holds.
  result<double> pass();
  // n_passes passes: the fastest and the slowest. Errors: passes < 1, a pass's.
  result<bandwidth_result> measure(int n_passes);
  size_t buffer_bytes() const;
  int n_threads() const;
  bool used_avx2() const;

 private:
  struct state;
  explicit read_probe(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

// A probe of `buffer_bytes` with n_threads threads, n_passes passes; keeps the fastest (and the
// slowest). Errors: those of read_probe, and passes < 1.
result<bandwidth_result> measure_read_bandwidth(const bandwidth_options& opts);

}  // namespace glia
