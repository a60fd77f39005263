// Repetition, frequency and presence penalties over a sliding window of the context.
#include <deque>
#include <unordered_map>

#include "sampler/stages.h"

namespace glia {
namespace {

class penalties_stage final : public sampler_stage {
 public:
  explicit penalties_stage(const penalty_params& p) : p_(p) {}

  void accept(int32_t id) override {
    if (p_.last_n == 0) return;
    window_.push_back(id);
    ++counts_[id];
    if (p_.last_n > 0 && window_.size() > size_t(p_.last_n)) {
      const int32_t old = window_.front();
      window_.pop_front();
      if (--counts_[old] == 0) counts_.erase(old);
    }
  }

  void reset() override {
    window_.clear();
    counts_.clear();
  }

  void apply(candidate_list& c) override {
    if (p_.last_n == 0 || counts_.empty()) return;
    if (p_.repeat == 1.0f && p_.frequency == 0.0f && p_.presence == 0.0f) return;
    for (const auto& [id, count] : counts_) {
      candidate* x = c.find(id);
      if (!x) continue;
      // Dividing a negative logit would raise it, hence llama.cpp's sign split.
      if (x->logit > 0.0f)
        x->logit /= p_.repeat;
      else
        x->logit *= p_.repeat;
      x->logit -= float(count) * p_.frequency + p_.presence;
    }
    c.mark_unsorted();
  }

 private:
  penalty_params p_;
  std::deque<int32_t> window_;                // the last last_n accepted tokens, oldest first
  std::unordered_map<int32_t, int> counts_;   // occurrences of each id in window_
};

}  // namespace

std::unique_ptr<sampler_stage> make_penalties(const penalty_params& p) { return std::make_unique<penalties_stage>(p); }

}  // namespace glia
