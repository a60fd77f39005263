#include "sampler/reasoning_gate.h"

#include <stdexcept>

namespace glia {

reasoning_gate::reasoning_gate(const reasoning_limit& tags, int32_t open_id, token_text_fn token_text)
    : deferred_(true), starts_inside_(tags.starts_inside), open_id_(open_id), close_(tags.close), before_(tags.before), text_(std::move(token_text)) {
  if (close_.empty()) throw std::invalid_argument("reasoning_gate: the reasoning needs a close tag");
  if (!text_) throw std::invalid_argument("reasoning_gate: finding the close tag needs the tokens' texts");
  reset();
}

reasoning_gate::phase reasoning_gate::start_phase() const {
  if (!deferred_) return phase::constrained;
  if (starts_inside_) return phase::reasoning;
  return open_id_ >= 0 ? phase::first : phase::constrained;
}

reasoning_gate::taken reasoning_gate::accept(int32_t id) {
  switch (phase_) {
    case phase::constrained: return {true, {}};
    case phase::first:
      if (id != open_id_) {
        phase_ = phase::constrained;
        return {true, {}};
      }
      phase_ = phase::reasoning;
      return {};
    case phase::reasoning: {
      tail_ += text_(id);
      const size_t at = tail_.find(close_);
      if (at == std::string::npos) {
        if (tail_.size() >= close_.size()) tail_.erase(0, tail_.size() - (close_.size() - 1));
        return {};
      }
      phase_ = phase::constrained;
      size_t from = at + close_.size();
      while (from < tail_.size() && (tail_[from] == ' ' || tail_[from] == '\n' || tail_[from] == '\t' || tail_[from] == '\r')) ++from;
      taken t{false, tail_.substr(from)};
      tail_.clear();
      return t;
    }
  }
  return {true, {}};
}

void reasoning_gate::reset() {
  phase_ = start_phase();
  // The text before the reply may hold the close tag's start, which the reply's first token ends.
  tail_ = phase_ == phase::reasoning && before_.size() < close_.size() ? before_ : std::string();
}

}  // namespace glia
