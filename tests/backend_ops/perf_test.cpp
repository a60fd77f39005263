// Perf mode of the harness (figures, not pass/fail; disabled by default). Run with
//   test_backend_ops --gtest_also_run_disabled_tests --gtest_filter='*Perf*'
// Prints, for a 2048 x 2048 weight and one token (a decode step), the GFLOP/s and the weight
// bandwidth of the reference backend and of the CPU backend with 1 thread and all threads.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "core/thread_pool.h"
#include "harness.h"

namespace glia::test {
namespace {

// Seconds per call: the best of 5 rounds, each timed over enough calls to fill budget / 5 seconds
// (the best round is the least disturbed by other processes on a shared machine).
template <typename F>
double seconds_per_call(F&& f, double budget = 0.5) {
  using clock = std::chrono::steady_clock;
  f();  // warm caches and the pool
  int reps = 1;
  const double round = budget / 5;
  for (;;) {  // calibrate reps to one round
    const auto t0 = clock::now();
    for (int i = 0; i < reps; ++i) f();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s >= round || reps >= (1 << 20)) break;
    reps = s <= 0 ? reps * 16 : std::max(reps * 2, int(double(reps) * round / s * 1.2));
  }
  double best = INFINITY;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = clock::now();
    for (int i = 0; i < reps; ++i) f();
    best = std::min(best, std::chrono::duration<double>(clock::now() - t0).count() / reps);
  }
  return best;
}

TEST(backend_ops, DISABLED_MatmulPerf) {
  const int64_t n = 2048;
  const int hw = std::max(1, int(std::thread::hardware_concurrency()));
  const auto ref = make_ref_backend();
  const auto cpu1 = make_cpu_backend(1);
  const auto cpun = make_cpu_backend(hw);
  const auto x = random_floats(size_t(n), 1);
  std::vector<float> y(static_cast<size_t>(n));
  fmt::print("matmul {}x{}, n_tok=1; kernels: {}; {} hardware threads\n", n, n, cpu::kernels().isa, hw);
  fmt::print("{:<7} {:>6} {:>22} {:>22} {:>22} {:>22}\n", "type", "MiB", "ref", "cpu 1 thread",
             fmt::format("cpu {} threads", hw), "cpu 1 thr, L2-hot");
  for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::f16, dtype::bf16, dtype::f32, dtype::q4_k, dtype::q6_k}) {
    const test_weight w = make_weight(t, n, n, 3);
    auto cell = [&](backend& b, const weight_view& wv) {
      const double bytes = double(wv.row_stride) * double(wv.n_out);
      const double s = seconds_per_call([&] { b.matmul(wv, x.data(), 1, y.data()); });
      return fmt::format("{:7.2f} GF/s {:6.1f} GB/s", 2.0 * double(wv.n_in) * double(wv.n_out) / s * 1e-9,
                         bytes / s * 1e-9);
    };
    // The first 64 rows only: small enough to stay in L2, so this column measures the kernel
    // rather than the memory system.
    weight_view hot = w.view;
    hot.n_out = 64;
    fmt::print("{:<7} {:>6.2f} {:>22} {:>22} {:>22} {:>22}  [{}]\n", type_label(t), double(w.bytes.size()) / (1 << 20),
               cell(*ref, w.view), cell(*cpu1, w.view), cell(*cpun, w.view), cell(*cpu1, hot),
               cpu::kernels().vec_dot_isa(t));
  }
}

// Cost of one empty job: what every parallel op pays on top of its work.
TEST(backend_ops, DISABLED_ThreadPoolPerf) {
  for (int nth : {2, 3, 4}) {
    thread_pool pool(nth);
    const double s = seconds_per_call([&] { pool.run([](int, int) {}); }, 0.2);
    fmt::print("thread_pool({}): {:.2f} us per empty run\n", nth, s * 1e6);
  }
}

}  // namespace
}  // namespace glia::test
