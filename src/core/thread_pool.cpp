#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace glia {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a thread spins before it sleeps. Long enough to bridge the gap between two kernels of one
// forward step (a norm or a rope on thread 0 between two matmuls), short enough that an idle pool
// goes quiet at once. Past the first few pause iterations the spin yields, so an oversubscribed
// machine (more threads than cores) still lets the thread we wait for run.
constexpr auto spin_budget = std::chrono::microseconds(200);
constexpr int pause_iterations = 256;

template <typename Ready>
bool spin_until(Ready ready) {
  for (int i = 0; i < pause_iterations; ++i) {
    if (ready()) return true;
    cpu_relax();
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 16; ++i) {
      if (ready()) return true;
      std::this_thread::yield();
    }
    if (std::chrono::steady_clock::now() - start > spin_budget) return ready();
  }
}

}  // namespace

thread_pool::thread_pool(int n_threads) {
  if (n_threads <= 0) n_threads = int(std::thread::hardware_concurrency());
  n_threads_ = n_threads > 0 ? n_threads : 1;
  warm_ = std::make_unique<warm_queue[]>(size_t(n_threads_));
  workers_.reserve(size_t(n_threads_ - 1));
  for (int ith = 1; ith < n_threads_; ++ith) workers_.emplace_back([this, ith] { worker_loop(ith); });
}

thread_pool::~thread_pool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lk(sleep_mutex_);
  }
  job_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void thread_pool::start(const std::function<void(int, int)>& fn) {
  job_ = &fn;
  left_.store(0, std::memory_order_relaxed);
  entry_.store((generation_.load(std::memory_order_relaxed) + 1) << 32, std::memory_order_relaxed);
  // seq_cst increment then seq_cst load of the sleeper count, against the worker's seq_cst
  // increment then load of the generation: one of the two sides always sees the other (no lost
  // wake-up). The increment also publishes job_, left_ and entry_ to the workers that see it.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (n_sleeping_workers_.load(std::memory_order_seq_cst) > 0) {
    {
      std::lock_guard<std::mutex> lk(sleep_mutex_);
    }
    job_cv_.notify_all();
  }
}

void thread_pool::run(const std::function<void(int, int)>& fn) { run_job(fn, false); }

void thread_pool::run_dynamic(const std::function<void(int, int)>& fn) { run_job(fn, true); }

void thread_pool::parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  run_dynamic([&](int, int) {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  });
}

void thread_pool::run_job(const std::function<void(int, int)>& fn, bool dynamic) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  std::lock_guard<std::mutex> one_job(run_mutex_);
  start(fn);
  fn(0, n_threads_);
  // A static job waits for every worker (nothing closes it, so each joins); a dynamic one closes
  // and waits for those that joined.
  const int workers = dynamic ? int(entry_.fetch_or(entry_closed, std::memory_order_acq_rel) & entry_count) : n_threads_ - 1;
  wait_until_left(workers);
  job_ = nullptr;
}

bool thread_pool::join(uint64_t generation) {
  const uint64_t want = (generation << 32) >> 32;  // the low 32 bits, as entry_ keeps them
  uint64_t e = entry_.load(std::memory_order_acquire);
  for (;;) {
    if (e >> 32 != want || (e & entry_closed)) return false;
    if (entry_.compare_exchange_weak(e, e + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
  }
}

void thread_pool::wait_until_left(int n) {
  auto done = [this, n] { return left_.load(std::memory_order_acquire) == n; };
  if (spin_until(done)) return;
  std::unique_lock<std::mutex> lk(sleep_mutex_);
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  done_cv_.wait(lk, [this, n] { return left_.load(std::memory_order_seq_cst) == n; });
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

void thread_pool::warm(int ith, std::span<const std::span<const uint8_t>> spans) {
  if (ith <= 0 || ith >= n_threads_) return;
  warm_queue& q = warm_[size_t(ith)];
  while (q.busy.test_and_set(std::memory_order_acquire)) cpu_relax();
  q.n = std::min(spans.size(), max_warm_spans);
  std::copy_n(spans.begin(), q.n, q.spans);
  q.next = 0;
  q.offset = 0;
  q.busy.clear(std::memory_order_release);
}

bool thread_pool::warm_step(int ith) {
  // 16 lines per step: with the ~10-12 misses a core keeps in flight, a step takes well under a
  // microsecond, which bounds how late a new job starts on this worker.
  constexpr size_t line = 64, step_bytes = 16 * line;
  warm_queue& q = warm_[size_t(ith)];
  while (q.busy.test_and_set(std::memory_order_acquire)) cpu_relax();
  while (q.next < q.n && q.offset >= q.spans[q.next].size()) {
    ++q.next;
    q.offset = 0;
  }
  if (q.next == q.n) {
    q.busy.clear(std::memory_order_release);
    return false;
  }
  const std::span<const uint8_t> s = q.spans[q.next].subspan(q.offset, std::min(step_bytes, q.spans[q.next].size() - q.offset));
  q.offset += s.size();
  q.busy.clear(std::memory_order_release);
  for (size_t i = 0; i < s.size(); i += line) __builtin_prefetch(s.data() + i, 0, 2);
  return true;
}

uint64_t thread_pool::wait_for_job(int ith, uint64_t seen) {
  auto changed = [this, seen] { return generation_.load(std::memory_order_acquire) != seen; };
  while (!changed() && warm_step(ith)) {
  }
  if (spin_until(changed)) return generation_.load(std::memory_order_acquire);
  std::unique_lock<std::mutex> lk(sleep_mutex_);
  n_sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
  job_cv_.wait(lk, [this, seen] { return generation_.load(std::memory_order_seq_cst) != seen; });
  n_sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
  return generation_.load(std::memory_order_acquire);
}

void thread_pool::worker_loop(int ith) {
  uint64_t seen = 0;
  for (;;) {
    seen = wait_for_job(ith, seen);
    if (stop_.load(std::memory_order_acquire)) return;
    if (!join(seen)) continue;  // the caller finished a dynamic job without this worker
    (*job_)(ith, n_threads_);
    left_.fetch_add(1, std::memory_order_seq_cst);
    if (caller_sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lk(sleep_mutex_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace glia
