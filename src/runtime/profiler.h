// Per-op profiler: the forward pass reports every op's begin/end through its op hook; this class
// sums the time per op name, overall and per phase (prefill, decode: where a decode step's time goes
// is not the prompt's), counts prefill and decode tokens, and renders a table, JSON and a Chrome
// trace (chrome://tracing, Perfetto).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/forward.h"

namespace glia {

class profiler {
 public:
  enum class phase { prefill, decode };

  // The hook to install on a forward_pass.
  op_hook hook();
  // Wraps one forward call: `n_tokens` evaluated in `p`.
  void begin_forward(phase p, int64_t n_tokens);
  void end_forward(bool succeeded = true);  // a failed forward's time counts, its tokens do not
  // Speculative decoding: a verification pass evaluates the sampled token and its drafts, and the
  // drafts the target rejects (or that generation ends before judging) leave the context. They
  // leave the decode token count too (decode tokens are the evaluated tokens that stay, as without
  // a draft; their time stays in decode), and the draft model's time (proposing, catching up) is
  // added to decode's rate.
  void discard_decoded(int64_t n_tokens);
  void add_draft_time(double ms);

  struct op_stat {
    double ms = 0.0;
    int64_t calls = 0;
    double phase_ms[2] = {0.0, 0.0};  // of ms: in prefill forwards, in decode forwards
  };

  std::string table() const;       // human-readable, for stderr
  std::string json() const;        // {"ops": [...], "prefill": {...}, "decode": {...}}
  std::string chrome_trace() const;  // {"traceEvents": [...]}

 private:
  using clock = std::chrono::steady_clock;
  struct event {
    const char* name;
    double start_us;
    double dur_us;
  };
  double now_us() const;

  std::map<std::string, op_stat> ops_;
  std::vector<event> events_;
  std::vector<std::pair<const char*, double>> open_;  // op name, start
  clock::time_point origin_ = clock::now();
  double forward_start_us_ = 0.0;
  double forward_ms_ = 0.0;
  phase phase_ = phase::prefill;
  int64_t phase_tokens_ = 0;
  double tokens_[2] = {0, 0};
  double phase_ms_[2] = {0, 0};
  int64_t discarded_ = 0;  // decode tokens dropped after their verification pass
  double draft_ms_ = 0.0;
  bool drafted() const { return draft_ms_ > 0.0 || discarded_ > 0; }  // a draft model took part
  size_t max_events_ = 2'000'000;  // bounds the trace's memory on long runs
};

}  // namespace glia
