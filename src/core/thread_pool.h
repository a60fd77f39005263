// A fixed set of persistent worker threads that run one job at a time, on all threads (run) or on
// the caller and whichever workers start it in time (run_dynamic).
//
// Kernels are short (a decode-step matmul takes tens of microseconds), so the wake-up has to be
// cheap: workers spin for a little while on an atomic generation counter after each job, which makes
// back-to-back jobs start within a microsecond or two, and only then sleep on a condition variable so
// an idle pool burns no CPU. The caller of run() takes part as thread 0. Before spinning, a worker
// prefetches whatever memory it was told a coming job will read (warm()).
//
// A job whose work is handed out through shared counters (run_dynamic) does not wait for workers
// that have not started it by the time the caller is done: on a busy machine (or a VM whose vCPU
// the host has taken away) a runnable worker can wait milliseconds for a core, and a join that
// needs every worker turned each such wait into a stall of the whole step (TinyLlama decode with
// 2 threads beside a 2-job compile: 7.3 t/s against 16.9 with 1 thread).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

namespace glia {

class thread_pool {
 public:
  // n_threads <= 0 means one thread per hardware thread. The pool starts n_threads - 1 workers.
  explicit thread_pool(int n_threads);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(ith, nth) for ith in [0, nth) with nth = size(), each call on its own thread (ith 0 on
  // the calling thread), and returns once every call has returned. Calls from several threads at
  // once are serialized. fn must not call run() on the same pool, nor throw.
  void run(const std::function<void(int ith, int nth)>& fn);

  // Runs fn(0, nth) on the calling thread and fn(ith, nth) on each worker ith that starts the job
  // before the caller's own call has returned; returns once those calls have returned. For jobs that
  // hand out their work through shared counters, so that whatever a worker did not take the caller
  // does: a worker the OS has not scheduled yet then costs the job nothing. Same rules as run().
  void run_dynamic(const std::function<void(int ith, int nth)>& fn);
  // fn(i) for every i in [0, n), the indices handed out one at a time through run_dynamic: for
  // items that each take a while (a pass over a vocabulary), whose results land in slots of their own.
  void parallel_for(size_t n, const std::function<void(size_t i)>& fn);

  // Memory a job to come will read on worker ith (1 <= ith < size()), for that worker to bring
  // into its cache (L2) while it waits for the job: between jobs it prefetches the spans in order,
  // a few cache lines at a time, checking for a new job after each step. Time it would spend
  // spinning becomes memory traffic the job then does not wait for. Replaces what the worker had
  // left to warm; spans beyond max_warm_spans are dropped. Only a hint: nothing is read or written
  // through the spans, so they may point anywhere the process can read.
  static constexpr size_t max_warm_spans = 4;
  void warm(int ith, std::span<const std::span<const uint8_t>> spans);

 private:
  // What one worker has left to warm, guarded by a spin lock (the worker and warm() hold it for a
  // few instructions only).
  struct alignas(64) warm_queue {
    std::atomic_flag busy;
    std::span<const uint8_t> spans[max_warm_spans];
    size_t n = 0, next = 0, offset = 0;  // spans[next] is warmed up to offset
  };
  // Prefetches the next few lines of worker ith's warm queue; false when it is empty.
  bool warm_step(int ith);

  void worker_loop(int ith);
  // Worker ith waits until generation_ differs from `seen` (or stop), warming its queue meanwhile;
  // returns the new generation.
  uint64_t wait_for_job(int ith, uint64_t seen);
  void run_job(const std::function<void(int, int)>& fn, bool dynamic);
  // Publishes fn as the next job and wakes sleeping workers.
  void start(const std::function<void(int, int)>& fn);
  // A worker joins job `generation` unless a newer job replaced it or the caller closed it.
  bool join(uint64_t generation);
  // The caller waits until `n` workers have finished the current job.
  void wait_until_left(int n);

  int n_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time

  const std::function<void(int, int)>* job_ = nullptr;  // published by generation_ (release)
  std::atomic<uint64_t> generation_{0};
  // The current job's low 32 generation bits, a closed bit (run_dynamic: no more workers may
  // join) and how many workers joined; joining is a compare-exchange on the whole word, so a worker
  // that saw an older job, or came after the close, cannot join.
  std::atomic<uint64_t> entry_{0};
  static constexpr uint64_t entry_closed = uint64_t(1) << 31, entry_count = entry_closed - 1;
  std::atomic<int> left_{0};  // workers that finished the current job
  std::atomic<bool> stop_{false};

  // Sleeping side: a waker only takes the mutex when someone is (about to be) asleep.
  std::mutex sleep_mutex_;
  std::condition_variable job_cv_;   // workers wait for a new generation
  std::condition_variable done_cv_;  // the caller waits for left_ to reach its count
  std::atomic<int> n_sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};

  std::unique_ptr<warm_queue[]> warm_;  // one per thread (0 unused)
};

// The [begin, end) part of [0, n) that thread ith of nth handles: contiguous, sizes differ by at
// most one, and the parts cover [0, n) in order.
inline std::pair<int64_t, int64_t> split_range(int64_t n, int ith, int nth) {
  const int64_t base = n / nth;
  const int64_t extra = n % nth;
  const int64_t begin = ith * base + (ith < extra ? ith : extra);
  const int64_t len = base + (ith < extra ? 1 : 0);
  return {begin, begin + len};
}

}  // namespace glia
