// The engine thread (continuous batching): a bounded queue of jobs and N slots, each a sequence of one
// shared session. Between steps it moves queued jobs into free slots (preferring the slot whose
// sequence shares the longest prefix with the prompt), then runs ONE batched forward pass for all busy
// slots: a prompt chunk for slots still prefilling, one token for the others. New requests so join
// the running batch between decode steps, and a long prompt never stalls the streams running.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/job.h"
#include "server/metrics.h"
#include "server/slot.h"

namespace glia::server {

struct scheduler_options {
  int prefill_chunk = 128;  // prompt tokens per step
  int max_queue = 64;       // jobs waiting for a slot; more get 503
};

enum class submit_result { accepted, queue_full, shutting_down };

class scheduler {
 public:
  // Makes `sess` hold n_slots sequences.
  static result<std::unique_ptr<scheduler>> create(std::unique_ptr<session> sess, int n_slots, const scheduler_options& opts,
                                                   metrics& m);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  submit_result submit(std::shared_ptr<job> j);
  // A request's choices, queued together or not at all.
  submit_result submit_all(std::vector<std::shared_ptr<job>> jobs);
  // Work that needs the session but is no generation (an embedding): run on the engine thread
  // between two steps, before the next step. Every accepted task runs, during a shutdown too.
  submit_result run_between_steps(std::function<void(session&)> task);
  // Refuses new jobs, lets the queued and running ones finish, and stops the engine thread.
  void shutdown();
  // Ends every queued and running job with a 503 and this message (a drain's deadline passed), at the
  // engine thread's next turn (after the forward pass it may be in); waits up to `wait` for that and
  // returns whether it came. Jobs submitted later are refused.
  bool abort_all(std::string why, std::chrono::milliseconds wait);
  gauges snapshot() const;
  // A session for tokenizing and templates (const use only: safe from any thread).
  const session& any_session() const { return *sess_; }

 private:
  scheduler(std::unique_ptr<session> sess, int n_slots, const scheduler_options& opts, metrics& m);
  void loop();
  void step();
  void admit_locked();
  void drop_abandoned_locked();
  void abort_jobs_locked();

  std::unique_ptr<session> sess_;
  std::vector<std::unique_ptr<slot>> slots_;
  std::vector<std::vector<int32_t>> planned_;  // per slot: tokens to evaluate this step
  std::vector<float> logits_;
  scheduler_options opts_;
  metrics& m_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<job>> queue_;
  std::deque<std::function<void(session&)>> tasks_;
  static constexpr size_t max_tasks = 4096;  // run_between_steps beyond this: queue_full
  int busy_ = 0;
  bool stopping_ = false;
  std::string abort_why_;  // abort_all's message: the engine thread ends every job with it
  bool aborted_ = false;   // and it has
  std::condition_variable aborted_cv_;
  std::vector<int64_t> kv_used_;  // per slot, updated by the engine thread under mu_
  std::chrono::steady_clock::time_point next_abandon_scan_{};
  std::thread thread_;
};

}  // namespace glia::server
