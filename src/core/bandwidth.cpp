#include "core/bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "core/cpu_features.h"
#include "core/huge_page_buffer.h"
#include "core/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GLIA_BW_X86 1
#endif

namespace glia {
namespace {

constexpr size_t k_align = 4096;  // slices start on page boundaries
constexpr size_t k_step = 128;    // bytes per unrolled iteration: four 256-bit loads

#ifdef GLIA_BW_X86
// Four independent accumulators keep four loads in flight per iteration; the adds are one cycle
// each, so the loop issues loads as fast as the memory system returns lines.
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + k_step <= n; i += k_step) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

uint64_t sum_portable(const uint8_t* p, size_t n) {
  uint64_t a[8] = {};
  for (size_t i = 0; i + 64 <= n; i += 64) {
    uint64_t w[8];
    std::memcpy(w, p + i, sizeof w);
    for (int j = 0; j < 8; ++j) a[j] += w[j];
  }
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

// The byte each thread writes into its slice (non-zero, so that the pages are really written).
uint8_t fill_byte(int ith) { return uint8_t(1 + ith % 250); }

}  // namespace

result<bandwidth_result> measure_read_bandwidth(const bandwidth_options& opts) {
  if (opts.buffer_bytes < (size_t(1) << 20))
    return make_error("bandwidth probe: buffer of {} bytes is below the minimum of 1 MiB", opts.buffer_bytes);
  if (opts.n_passes < 1) return make_error("bandwidth probe: {} passes, need at least 1", opts.n_passes);
  thread_pool pool(opts.n_threads);
  const int nth = pool.size();
  // Each thread's slice is a whole number of pages and of loop steps.
  const size_t slice = opts.buffer_bytes / size_t(nth) / k_align * k_align;
  if (slice == 0) return make_error("bandwidth probe: buffer of {} bytes is too small for {} threads", opts.buffer_bytes, nth);
  const size_t total = slice * size_t(nth);
  // The same huge-page memory the repacked weights live in (huge_page_buffer), so that the ceiling
  // is what the machine reads at best, not a figure lowered by a TLB miss every 4 KiB.
  huge_page_buffer buf;
  if (!buf.allocate(total)) return make_error("bandwidth probe: cannot allocate {} bytes", total);

  // First touch by the thread that reads the slice later (its pages land on its memory node).
  pool.run([&](int ith, int) { std::memset(buf.mutable_data() + size_t(ith) * slice, fill_byte(ith), slice); });

  bool avx2 = false;
#ifdef GLIA_BW_X86
  avx2 = has_avx2();
#endif
  std::atomic<uint64_t> sink{0};  // keeps the sums alive so the reads cannot be optimized away
  auto read_pass = [&](int ith, int) {
    const uint8_t* p = buf.data() + size_t(ith) * slice;
#ifdef GLIA_BW_X86
    const uint64_t s = avx2 ? sum_avx2(p, slice) : sum_portable(p, slice);
#else
    const uint64_t s = sum_portable(p, slice);
#endif
    sink.fetch_add(s, std::memory_order_relaxed);
  };

  bandwidth_result r;
  r.buffer_bytes = total;
  r.n_threads = nth;
  r.n_passes = opts.n_passes;
  r.used_avx2 = avx2;
  r.worst_bytes_per_second = 0.0;
  for (int pass = 0; pass < opts.n_passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run(read_pass);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double bps = double(total) / std::max(s, 1e-9);
    r.bytes_per_second = std::max(r.bytes_per_second, bps);
    r.worst_bytes_per_second = pass == 0 ? bps : std::min(r.worst_bytes_per_second, bps);
  }
  // Every byte is 1 + slice index, so the sum of one pass is known: a cheap check that every
  // thread read its whole slice (a wrong loop bound would show up here, not as a fast result).
  uint64_t want = 0;
  for (int ith = 0; ith < nth; ++ith) want += uint64_t(slice) / 8 * (uint64_t(fill_byte(ith)) * 0x0101010101010101ull);
  if (sink.load() != want * uint64_t(opts.n_passes))
    return make_error("bandwidth probe: read checksum {} differs from the expected {}", sink.load(), want * uint64_t(opts.n_passes));
  return r;
}

}  // namespace glia
