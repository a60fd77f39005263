#include "runtime/profiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/json_text.h"

namespace glia {

double profiler::now_us() const {
  return std::chrono::duration<double, std::micro>(clock::now() - origin_).count();
}

op_hook profiler::hook() {
  return [this](const char* op, bool begin) {
    const double t = now_us();
    if (begin) {
      open_.emplace_back(op, t);
      return;
    }
    if (open_.empty()) return;
    const auto [name, start] = open_.back();
    open_.pop_back();
    auto& s = ops_[name];
    s.ms += (t - start) / 1000.0;
    s.phase_ms[phase_ == phase::prefill ? 0 : 1] += (t - start) / 1000.0;
    ++s.calls;
    if (events_.size() < max_events_) events_.push_back({name, start, t - start});
  };
}

void profiler::begin_forward(phase p, int64_t n_tokens) {
  phase_ = p;
  phase_tokens_ = n_tokens;
  forward_start_us_ = now_us();
}

void profiler::end_forward(bool succeeded) {
  const double dur = now_us() - forward_start_us_;
  forward_ms_ += dur / 1000.0;
  const int i = phase_ == phase::prefill ? 0 : 1;
  if (succeeded) tokens_[i] += double(phase_tokens_);
  phase_ms_[i] += dur / 1000.0;
  if (events_.size() < max_events_)
    events_.push_back({phase_ == phase::prefill ? "forward (prefill)" : "forward (decode)", forward_start_us_, dur});
}

void profiler::discard_decoded(int64_t n_tokens) {
  tokens_[1] -= double(n_tokens);
  discarded_ += n_tokens;
}

void profiler::add_draft_time(double ms) {
  draft_ms_ += ms;
}

namespace {
struct row {
  std::string name;
  double ms;
  int64_t calls;
  double phase_ms[2];
};
}  // namespace

// Rows sorted by time, plus "other" (forward time outside any op, per phase, and their sum) so that
// percentages add up to 100 and each phase's column to that phase's forward time (every op runs
// inside a forward: session::eval and eval_batch wrap them).
static std::vector<row> rows_of(const std::map<std::string, profiler::op_stat>& ops,
                                const double phase_forward_ms[2]) {
  std::vector<row> rows;
  double op_phase[2] = {0.0, 0.0};
  for (const auto& [name, s] : ops) {
    rows.push_back({name, s.ms, s.calls, {s.phase_ms[0], s.phase_ms[1]}});
    for (int i = 0; i < 2; ++i) op_phase[i] += s.phase_ms[i];
  }
  std::sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.ms > b.ms; });
  const double other[2] = {std::max(0.0, phase_forward_ms[0] - op_phase[0]), std::max(0.0, phase_forward_ms[1] - op_phase[1])};
  rows.push_back({"other", other[0] + other[1], 0, {other[0], other[1]}});
  return rows;
}

std::string profiler::table() const {
  std::string out = fmt::format("{:<14} {:>10} {:>8} {:>9} {:>12} {:>12} {:>14}\n", "op", "ms", "%", "calls", "prefill ms",
                                "decode ms", "decode us/tok");
  const double total = std::max(forward_ms_, 1e-9);
  // "-" in a run without decoded tokens.
  auto per_token_us = [this](double ms) { return tokens_[1] > 0 ? fmt::format("{:.1f}", 1000.0 * ms / tokens_[1]) : "-"; };
  for (const auto& r : rows_of(ops_, phase_ms_))
    out += fmt::format("{:<14} {:>10.3f} {:>7.2f}% {:>9} {:>12.3f} {:>12.3f} {:>14}\n", r.name, r.ms, 100.0 * r.ms / total,
                       r.calls, r.phase_ms[0], r.phase_ms[1], per_token_us(r.phase_ms[1]));
  out += fmt::format("{:<14} {:>10.3f} {:>7.2f}% {:>9} {:>12.3f} {:>12.3f} {:>14}\n", "total", forward_ms_, 100.0, "",
                     phase_ms_[0], phase_ms_[1], per_token_us(phase_ms_[1]));
  auto rate = [](double tok, double ms) { return ms > 0 ? tok / (ms / 1000.0) : 0.0; };
  out += fmt::format("prefill: {} tokens in {:.3f} ms ({:.2f} t/s)\n", int64_t(tokens_[0]), phase_ms_[0], rate(tokens_[0], phase_ms_[0]));
  if (!drafted()) {
    out += fmt::format("decode:  {} tokens in {:.3f} ms ({:.2f} t/s)\n", int64_t(tokens_[1]), phase_ms_[1], rate(tokens_[1], phase_ms_[1]));
    return out;
  }
  out += fmt::format("decode:  {} tokens in {:.3f} ms + {:.3f} ms in the draft model ({:.2f} t/s); {} draft tokens "
                     "evaluated and dropped besides\n",
                     int64_t(tokens_[1]), phase_ms_[1], draft_ms_, rate(tokens_[1], phase_ms_[1] + draft_ms_), discarded_);
  return out;
}

std::string profiler::json() const {
  nlohmann::json j;
  j["ops"] = nlohmann::json::array();
  const double total = std::max(forward_ms_, 1e-9);
  for (const auto& r : rows_of(ops_, phase_ms_))
    j["ops"].push_back({{"op", r.name},
                        {"ms", r.ms},
                        {"percent", 100.0 * r.ms / total},
                        {"calls", r.calls},
                        {"prefill_ms", r.phase_ms[0]},
                        {"decode_ms", r.phase_ms[1]}});
  j["total_ms"] = forward_ms_;
  auto phase_json = [](double tok, double ms) {
    return nlohmann::json{{"tokens", int64_t(tok)}, {"ms", ms}, {"tokens_per_second", ms > 0 ? tok / (ms / 1000.0) : 0.0}};
  };
  j["prefill"] = phase_json(tokens_[0], phase_ms_[0]);
  j["decode"] = phase_json(tokens_[1], phase_ms_[1]);
  if (drafted()) {  // ms stays the model's forwards (what the ops add up to); the rate counts the draft's time
    j["decode"]["draft_ms"] = draft_ms_;
    j["decode"]["dropped_draft_tokens"] = discarded_;
    j["decode"]["tokens_per_second"] = phase_json(tokens_[1], phase_ms_[1] + draft_ms_)["tokens_per_second"];
  }
  return json_text(j, 2);
}

std::string profiler::chrome_trace() const {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : events_)
    events.push_back({{"name", e.name}, {"cat", "op"}, {"ph", "X"}, {"ts", e.start_us}, {"dur", e.dur_us}, {"pid", 1}, {"tid", 1}});
  return json_text(nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}});
}

}  // namespace glia
