#include "server/scheduler.h"

#include <chrono>

namespace glia::server {

result<std::unique_ptr<scheduler>> scheduler::create(std::unique_ptr<session> sess, int n_slots, const scheduler_options& opts,
                                                     metrics& m) {
  GLIA_TRY(sess->set_sequence_count(n_slots));
  return std::unique_ptr<scheduler>(new scheduler(std::move(sess), n_slots, opts, m));
}

scheduler::scheduler(std::unique_ptr<session> sess, int n_slots, const scheduler_options& opts, metrics& m)
    : sess_(std::move(sess)), opts_(opts), m_(m) {
  for (int i = 0; i < n_slots; ++i) slots_.push_back(std::make_unique<slot>(*sess_, i, opts.prefill_chunk));
  planned_.resize(slots_.size());
  kv_used_.assign(slots_.size(), 0);
  thread_ = std::thread([this] { loop(); });
}

scheduler::~scheduler() { shutdown(); }

submit_result scheduler::submit(std::shared_ptr<job> j) { return submit_all({std::move(j)}); }

submit_result scheduler::submit_all(std::vector<std::shared_ptr<job>> jobs) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return submit_result::shutting_down;
    // Jobs that find a free slot do not count against the queue bound; a request whose choices
    // alone are more than it holds is taken when nothing else waits (it could never fit otherwise).
    // A request of several choices more than the queue holds is taken when nothing else waits, so
    // that it is not refused for ever (a single job keeps --max-queue's bound, 0 included).
    const int free_slots = int(slots_.size()) - busy_;
    const bool oversized = jobs.size() > 1 && int(jobs.size()) > opts_.max_queue;
    const auto full = [&] {
      if (oversized && queue_.empty()) return false;
      return int(queue_.size() + jobs.size()) > opts_.max_queue + std::max(0, free_slots);
    };
    if (full()) drop_abandoned_locked();
    if (full()) return submit_result::queue_full;
    for (auto& j : jobs) queue_.push_back(std::move(j));
  }
  cv_.notify_all();
  return submit_result::accepted;
}

submit_result scheduler::run_between_steps(std::function<void(session&)> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return submit_result::shutting_down;
    if (tasks_.size() >= max_tasks) return submit_result::queue_full;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
  return submit_result::accepted;
}

void scheduler::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool scheduler::abort_all(std::string why, std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  stopping_ = true;
  abort_why_ = std::move(why);
  cv_.notify_all();
  return aborted_cv_.wait_for(lock, wait, [this] { return aborted_; });
}

// Slots are the engine thread's: it ends their jobs itself, between two steps.
void scheduler::abort_jobs_locked() {
  for (auto& j : queue_) j->finish(finish_kind::error, abort_why_, 503);
  queue_.clear();
  for (auto& s : slots_)
    if (s->busy()) s->fail(abort_why_, 503);
  busy_ = 0;
  aborted_ = true;
  aborted_cv_.notify_all();
}

gauges scheduler::snapshot() const {
  std::lock_guard lock(mu_);
  gauges g;
  g.queue_length = int(queue_.size());
  g.busy_slots = busy_;
  g.n_slots = int(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    g.kv_used_tokens += kv_used_[i];
    g.kv_capacity_tokens += sess_->n_ctx();
  }
  return g;
}

// A job whose client went away while it waited gives its queue place back at once: otherwise clients
// that time out and retry under load fill the queue with abandoned requests, and live ones get 503
// until the running generations end.
void scheduler::drop_abandoned_locked() {
  std::erase_if(queue_, [this](const std::shared_ptr<job>& j) {
    if (!j->abandoned()) return false;
    if (j->first_cancelled_of_request()) m_.cancelled++;
    j->finish(finish_kind::cancelled);
    return true;
  });
}

void scheduler::admit_locked() {
  while (!queue_.empty()) {
    std::shared_ptr<job>& j = queue_.front();
    slot* best = nullptr;
    size_t best_common = 0;
    for (auto& s : slots_) {
      if (s->busy()) continue;
      const size_t c = s->common_prefix(j->prompt);
      if (!best || c > best_common) best = s.get(), best_common = c;
    }
    if (!best) return;
    best->start(std::move(j));
    queue_.pop_front();
    ++busy_;
  }
}

void scheduler::step() {
  using clock = std::chrono::steady_clock;
  std::vector<session::batch_item> items;
  std::vector<slot*> owners;
  size_t n_prefill = 0, n_decode = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    slot& s = *slots_[i];
    if (!s.busy()) continue;
    const bool prefill = s.prefilling();
    if (!s.plan(m_, planned_[i])) continue;
    const bool all = s.wants_all_logits();
    items.push_back(session::batch_item{s.seq(), planned_[i], all});
    owners.push_back(&s);
    (prefill ? n_prefill : n_decode) += planned_[i].size();
  }
  if (items.empty()) return;
  const auto t0 = clock::now();
  status st = sess_->eval_batch(items, logits_);
  const double us = double(std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t0).count());
  // One forward serves both kinds of rows: its time is shared out by row count.
  const double total = double(n_prefill + n_decode);
  m_.prefill_us += uint64_t(us * double(n_prefill) / total);
  m_.decode_us += uint64_t(us * double(n_decode) / total);
  m_.prompt_tokens += n_prefill;
  const size_t n_vocab = size_t(sess_->n_vocab());
  size_t row = 0;
  for (size_t k = 0; k < owners.size(); ++k) {
    const size_t rows = items[k].all_logits ? items[k].tokens.size() : 1;  // eval_batch's rows for the item
    if (!st) owners[k]->fail(st.message());
    else owners[k]->absorb(std::span<const float>(logits_).subspan(row * n_vocab, rows * n_vocab));
    row += rows;
  }
}

void scheduler::loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      // A poll per waiting job: at most every 50 ms, not every step, with a long queue.
      if (const auto now = std::chrono::steady_clock::now(); now >= next_abandon_scan_) {
        drop_abandoned_locked();
        next_abandon_scan_ = now + std::chrono::milliseconds(50);
      }
      if (!abort_why_.empty() && !aborted_) abort_jobs_locked();
      admit_locked();
      cv_.wait(lock, [&] { return busy_ > 0 || !queue_.empty() || !tasks_.empty() || stopping_; });
      if (!abort_why_.empty() && !aborted_) abort_jobs_locked();
      admit_locked();
      if (busy_ == 0 && queue_.empty() && tasks_.empty() && stopping_) return;
    }
    // Tasks run before the next step: all of them on an idle engine, one between two steps while
    // slots generate, so that a flood of them slows the streams rather than stalls them.
    for (bool first = true;; first = false) {
      std::function<void(session&)> task;
      {
        std::lock_guard lock(mu_);
        // After the first, only while the engine is idle: a job that came meanwhile is admitted first.
        if (tasks_.empty() || (!first && (busy_ > 0 || !queue_.empty()))) break;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task(*sess_);  // a task reports its own failures (it must not throw: nothing here could answer)
    }
    if (busy_ == 0) continue;
    // Slots are touched only by this thread; the lock guards the queue and the counters.
    step();
    int still_busy = 0;
    std::vector<int64_t> used(slots_.size());
    for (size_t i = 0; i < slots_.size(); ++i) {
      still_busy += slots_[i]->busy() ? 1 : 0;
      used[i] = int64_t(sess_->sequence_history(int(i)).size());
    }
    std::lock_guard lock(mu_);
    busy_ = still_busy;
    kv_used_ = std::move(used);
  }
}

}  // namespace glia::server
