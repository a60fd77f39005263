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

#ifdef GLIA_BW_X86
constexpr size_t k_streams = 4;  // sequential streams each thread reads side by side

// Streams start this far from the power-of-two quarters of a slice: on Zen 4 four streams exactly
// a power of two apart (a quarter of a 1 GiB slice) read as if they shared a few DRAM banks, one
// thread 9.8 GB/s against 28 for a single stream; staggered by 1021 cache lines, 25.5 (two
// threads 25.4 -> 33.4; medians of ten alternated passes, session 13).
constexpr size_t k_stagger = 1021 * 64;

// Each thread reads its slice as k_streams sequential streams side by side: a core with one stream
// in flight leaves part of its miss slots unused (Zen 3, 554 MB read one job per matrix like a
// decode step: 17.3 GB/s on one thread with one stream, 20.5 with two, 21.0 with four), and the
// ceiling is what the machine reads at best. Four independent accumulators, one 256-bit load from
// each stream per iteration; what the staggered streams leave at the end is read after them.
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint8_t* p, size_t n) {
  size_t part = n / k_streams / 32 * 32;
  if (part > 2 * k_stagger) part -= k_stagger;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= part; i += 32) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + part + i)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 2 * part + i)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 3 * part + i)));
  }
  // Slices are whole pages, so the tail is whole 32-byte loads (the pass's checksum would tell).
  for (size_t i = k_streams * part; i + 32 <= n; i += 32)
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  // GCC leaves it out at -Os (MinSizeRel), and the SSE code after would pay the transition.
  _mm256_zeroupper();
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

struct read_probe::state {
  explicit state(int n_threads) : pool(n_threads) {}
  thread_pool pool;
  huge_page_buffer buf;
  size_t slice = 0;
  bool avx2 = false;
  uint64_t want = 0;  // the sum of one pass over what the threads wrote
};

read_probe::read_probe(std::unique_ptr<state> s) : s_(std::move(s)) {}
read_probe::read_probe(read_probe&&) noexcept = default;
read_probe& read_probe::operator=(read_probe&&) noexcept = default;
read_probe::~read_probe() = default;

result<read_probe> read_probe::create(const bandwidth_options& opts) {
  if (opts.buffer_bytes < (size_t(1) << 20))
    return make_error("bandwidth probe: buffer of {} bytes is below the minimum of 1 MiB", opts.buffer_bytes);
  auto s = std::make_unique<state>(opts.n_threads);
  const int nth = s->pool.size();
  // Each thread's slice is a whole number of pages and of loop steps.
  s->slice = opts.buffer_bytes / size_t(nth) / k_align * k_align;
  if (s->slice == 0)
    return make_error("bandwidth probe: buffer of {} bytes is too small for {} threads", opts.buffer_bytes, nth);
  const size_t total = s->slice * size_t(nth);
  // The same huge-page memory the repacked weights live in (huge_page_buffer), so that the ceiling
  // is what the machine reads at best, not a figure lowered by a TLB miss every 4 KiB.
  if (!s->buf.allocate(total)) return make_error("bandwidth probe: cannot allocate {} bytes", total);
  // First touch by the thread that reads the slice later (its pages land on its memory node).
  state& st = *s;
  st.pool.run([&](int ith, int) { std::memset(st.buf.mutable_data() + size_t(ith) * st.slice, fill_byte(ith), st.slice); });
#ifdef GLIA_BW_X86
  s->avx2 = has_avx2();
#endif
  for (int ith = 0; ith < nth; ++ith) s->want += uint64_t(s->slice) / 8 * (uint64_t(fill_byte(ith)) * 0x0101010101010101ull);
  return read_probe(std::move(s));
}

result<double> read_probe::pass() {
  state& st = *s_;
  std::atomic<uint64_t> sink{0};  // keeps the sums alive so the reads cannot be optimized away
  const auto t0 = std::chrono::steady_clock::now();
  st.pool.run([&](int ith, int) {
    const uint8_t* p = st.buf.data() + size_t(ith) * st.slice;
#ifdef GLIA_BW_X86
    const uint64_t sum = st.avx2 ? sum_avx2(p, st.slice) : sum_portable(p, st.slice);
#else
    const uint64_t sum = sum_portable(p, st.slice);
#endif
    sink.fetch_add(sum, std::memory_order_relaxed);
  });
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every byte is 1 + slice index, so the sum of one pass is known: a cheap check that every
  // thread read its whole slice (a wrong loop bound would show up here, not as a fast result).
  if (sink.load() != st.want)
    return make_error("bandwidth probe: read checksum {} differs from the expected {}", sink.load(), st.want);
  return double(buffer_bytes()) / std::max(sec, 1e-9);
}

size_t read_probe::buffer_bytes() const { return s_->slice * size_t(s_->pool.size()); }
int read_probe::n_threads() const { return s_->pool.size(); }
bool read_probe::used_avx2() const { return s_->avx2; }

result<bandwidth_result> read_probe::measure(int n_passes) {
  if (n_passes < 1) return make_error("bandwidth probe: {} passes, need at least 1", n_passes);
  bandwidth_result r;
  r.buffer_bytes = buffer_bytes();
  r.n_threads = n_threads();
  r.n_passes = n_passes;
  r.used_avx2 = used_avx2();
  for (int i = 0; i < n_passes; ++i) {
    auto bps = pass();
    if (!bps) return bps.take_error();
    r.bytes_per_second = std::max(r.bytes_per_second, *bps);
    r.worst_bytes_per_second = i == 0 ? *bps : std::min(r.worst_bytes_per_second, *bps);
  }
  return r;
}

result<bandwidth_result> measure_read_bandwidth(const bandwidth_options& opts) {
  // Checked here too so that a bad count fails before the buffer is allocated and written.
  if (opts.n_passes < 1) return make_error("bandwidth probe: {} passes, need at least 1", opts.n_passes);
  auto probe = read_probe::create(opts);
  if (!probe) return probe.take_error();
  return probe->measure(opts.n_passes);
}

}  // namespace glia
