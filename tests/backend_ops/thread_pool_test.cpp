// The thread pool: every thread index runs exactly once per job, the caller is thread 0, jobs never
// overlap or get lost (neither while workers spin nor after they went to sleep), and split_range
// tiles [0, n). Warm requests (prefetch hints between jobs) never hold a job back. Dynamic jobs
// (run_dynamic) run on the caller and on any worker that starts in time, never twice on one
// index, and return only after every worker that started has finished.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace glia {
namespace {

TEST(thread_pool, size) {
  EXPECT_EQ(thread_pool(1).size(), 1);
  EXPECT_EQ(thread_pool(3).size(), 3);
  const int hw = int(std::thread::hardware_concurrency());
  EXPECT_EQ(thread_pool(0).size(), hw > 0 ? hw : 1);
}

TEST(thread_pool, each_index_once_caller_is_zero) {
  for (int n : {1, 2, 3, 5}) {
    thread_pool pool(n);
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::vector<std::thread::id> ids(static_cast<size_t>(n));
    std::atomic<int> bad_nth{0};
    pool.run([&](int ith, int nth) {
      if (nth != n) bad_nth.fetch_add(1);
      hits[size_t(ith)].fetch_add(1);
      ids[size_t(ith)] = std::this_thread::get_id();
    });
    EXPECT_EQ(bad_nth.load(), 0);
    for (int i = 0; i < n; ++i) EXPECT_EQ(hits[size_t(i)].load(), 1) << i;
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), size_t(n));
  }
}

// Back-to-back jobs (workers still spinning): each job's writes are complete when run() returns.
TEST(thread_pool, many_back_to_back_jobs) {
  thread_pool pool(3);
  std::vector<int64_t> slot(3, 0);  // plain ints: run() must order them
  for (int job = 0; job < 20000; ++job) pool.run([&](int ith, int) { slot[size_t(ith)] += job; });
  const int64_t want = int64_t(20000) * 19999 / 2;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(slot[size_t(i)], want) << i;
}

// Jobs separated by pauses longer than the spin budget: workers are asleep and must be woken.
TEST(thread_pool, jobs_after_sleep) {
  thread_pool pool(3);
  std::atomic<int> total{0};
  for (int job = 0; job < 20; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    pool.run([&](int, int) { total.fetch_add(1); });
  }
  EXPECT_EQ(total.load(), 60);
}

// Slow workers: the caller finishes its share first and must wait (spinning, then sleeping).
TEST(thread_pool, caller_waits_for_slow_workers) {
  thread_pool pool(3);
  std::atomic<int> done{0};
  pool.run([&](int ith, int) {
    if (ith != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 3);
}

// Two threads submitting jobs to one pool: jobs are serialized, none is lost or overlapped.
TEST(thread_pool, concurrent_submitters) {
  thread_pool pool(2);
  std::atomic<int> inside{0}, overlap{0}, total{0};
  auto submit = [&] {
    for (int i = 0; i < 2000; ++i)
      pool.run([&](int ith, int) {
        if (ith == 0 && inside.fetch_add(1) != 0) overlap.fetch_add(1);
        total.fetch_add(1);
        if (ith == 0) inside.fetch_sub(1);
      });
  };
  std::thread a(submit), b(submit);
  a.join();
  b.join();
  EXPECT_EQ(overlap.load(), 0);
  EXPECT_EQ(total.load(), 2 * 2000 * 2);
}

// Workers warming memory between jobs (thread_pool::warm) still take every job, and a new warm
// request replaces the old one: jobs interleaved with requests far larger than could be warmed in
// between all run, on every thread.
TEST(thread_pool, jobs_while_workers_warm) {
  thread_pool pool(3);
  std::vector<uint8_t> buffer(size_t(8) << 20, 1);
  const std::span<const uint8_t> whole(buffer);
  std::atomic<int> total{0};
  for (int job = 0; job < 2000; ++job) {
    const std::span<const uint8_t> spans[] = {whole.subspan(size_t(job % 7) << 20), whole, whole.first(64)};
    for (int ith = 1; ith < pool.size(); ++ith) pool.warm(ith, spans);
    pool.run([&](int, int) { total.fetch_add(1); });
  }
  EXPECT_EQ(total.load(), 3 * 2000);
}

// Requests the pool ignores (the caller's index, indices past the pool, more spans than it keeps,
// empty spans) and a pool destroyed while its workers warm: nothing hangs or faults.
TEST(thread_pool, warm_requests_at_the_edges) {
  std::vector<uint8_t> buffer(size_t(4) << 20, 1);
  const std::span<const uint8_t> whole(buffer);
  std::vector<std::span<const uint8_t>> many(thread_pool::max_warm_spans + 3, whole);
  many[1] = {};
  for (int n : {1, 2, 4}) {
    thread_pool pool(n);
    for (int ith = -1; ith <= n; ++ith) pool.warm(ith, many);
    std::atomic<int> total{0};
    pool.run([&](int, int) { total.fetch_add(1); });
    EXPECT_EQ(total.load(), n);
    for (int ith = 1; ith < n; ++ith) pool.warm(ith, many);
  }
}

// Items handed out by a counter, as the CPU backend's dynamic jobs do: each item is done exactly
// once whoever takes it, its writes are visible when run_dynamic returns (a worker that took an item
// and sleeps before writing it is waited for), and no index runs twice in one job. Dynamic and
// static jobs alternate, while workers spin and after they slept.
TEST(thread_pool, dynamic_jobs_do_every_item_once) {
  for (int n : {2, 3, 5}) {
    thread_pool pool(n);
    for (int job = 0; job < 300; ++job) {
      const int n_items = 1 + job % 7;
      std::vector<int> done(size_t(n_items), 0);  // plain ints: run_dynamic must order them
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      std::atomic<int> next{0}, bad_nth{0};
      pool.run_dynamic([&](int ith, int nth) {
        if (nth != n) bad_nth.fetch_add(1);
        runs[size_t(ith)].fetch_add(1);
        for (int i = next.fetch_add(1); i < n_items; i = next.fetch_add(1)) {
          if (ith != 0 && job % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
          done[size_t(i)] += 1;
        }
      });
      EXPECT_EQ(bad_nth.load(), 0);
      EXPECT_EQ(runs[0].load(), 1) << "the caller runs every dynamic job";
      for (int i = 1; i < n; ++i) EXPECT_LE(runs[size_t(i)].load(), 1) << "worker " << i;
      for (int i = 0; i < n_items; ++i) ASSERT_EQ(done[size_t(i)], 1) << "job " << job << " item " << i;
      if (job % 3 == 0) {
        std::vector<int> slot(size_t(n), 0);
        pool.run([&](int ith, int) { slot[size_t(ith)] += 1; });
        for (int i = 0; i < n; ++i) ASSERT_EQ(slot[size_t(i)], 1) << "static job after dynamic " << job;
      }
      if (job % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // workers sleep
    }
  }
}

// More workers than cores (most of them not running when a job starts): dynamic jobs still
// complete, every item once, and the pool shuts down cleanly.
TEST(thread_pool, dynamic_jobs_on_an_oversubscribed_pool) {
  thread_pool pool(32);
  int64_t total = 0;
  for (int job = 0; job < 2000; ++job) {
    std::vector<int64_t> part(64, 0);
    std::atomic<int> next{0};
    pool.run_dynamic([&](int, int) {
      for (int i = next.fetch_add(1); i < 64; i = next.fetch_add(1)) part[size_t(i)] = i + job;
    });
    for (int64_t v : part) total += v;
  }
  EXPECT_EQ(total, int64_t(2000) * (63 * 64 / 2) + int64_t(64) * (1999 * 2000 / 2));
}

TEST(split_range, tiles_evenly_in_order) {
  for (int64_t n : {0, 1, 2, 7, 64, 1000, 1001}) {
    for (int nth : {1, 2, 3, 8, 13}) {
      int64_t expect_begin = 0, min_len = n, max_len = 0;
      for (int ith = 0; ith < nth; ++ith) {
        const auto [b, e] = split_range(n, ith, nth);
        EXPECT_EQ(b, expect_begin) << n << " " << ith << "/" << nth;
        EXPECT_LE(b, e);
        min_len = std::min(min_len, e - b);
        max_len = std::max(max_len, e - b);
        expect_begin = e;
      }
      EXPECT_EQ(expect_begin, n);
      EXPECT_LE(max_len - min_len, 1);
    }
  }
}

}  // namespace
}  // namespace glia
