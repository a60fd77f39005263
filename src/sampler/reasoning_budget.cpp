#include "sampler/reasoning_budget.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

namespace glia {
namespace {

// Whether text ends inside a UTF-8 character: its last lead byte announces more bytes than follow.
// (The sampler layer does not depend on the tokenizer's UTF-8 reader, and only this test is needed.)
bool ends_mid_character(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(4, s.size()); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const size_t length = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return back < length;
  }
  return false;
}

}  // namespace

reasoning_budget::reasoning_budget(const reasoning_limit& r, token_text_fn token_text) : r_(r), text_(std::move(token_text)) {
  if (r_.open.empty() || r_.close.empty()) throw std::invalid_argument("reasoning_budget: the reasoning needs its open and close tags");
  if (r_.budget >= 0 && r_.forced.empty()) throw std::invalid_argument("reasoning_budget: a budget needs the tokens that close the reasoning");
  if (!text_) throw std::invalid_argument("reasoning_budget: finding the tags needs the tokens' texts");
  reset();
}

int32_t reasoning_budget::forced() const { return phase_ == phase::closing ? r_.forced[next_forced_] : -1; }

void reasoning_budget::accept(int32_t id) {
  switch (phase_) {
    case phase::done: return;
    case phase::closing:
      ++n_reasoning_;
      if (++next_forced_ == r_.forced.size()) phase_ = phase::done;
      return;
    case phase::reasoning:
      ++n_reasoning_;
      ++spent_;
      read_reasoning(text_(id));
      close_if_spent();
      return;
    case phase::start: {
      ++n_reasoning_;  // taken back below if the reply turns out not to reason
      seen_ += text_(id);
      const std::string_view rest = std::string_view(seen_).substr(std::min(seen_.size(), seen_.find_first_not_of(" \n\t\r")));
      if (rest.starts_with(r_.open)) {
        enter(std::string(rest.substr(r_.open.size())));
      } else if (!rest.empty() && !std::string_view(r_.open).starts_with(rest)) {
        phase_ = phase::done;
        n_reasoning_ = 0;
      }
      return;
    }
  }
}

void reasoning_budget::enter(const std::string& rest) {
  phase_ = phase::reasoning;
  seen_.clear();
  read_reasoning(rest);
  close_if_spent();
}

void reasoning_budget::read_reasoning(const std::string& piece) {
  seen_ += piece;
  if (seen_.find(r_.close) != std::string::npos) {
    phase_ = phase::done;
    seen_.clear();
    return;
  }
  // Enough of the end for a close tag cut across tokens, and for a cut character's lead byte.
  const size_t keep = std::max<size_t>(r_.close.size() - 1, 3);
  if (seen_.size() > keep) seen_.erase(0, seen_.size() - keep);
}

void reasoning_budget::close_if_spent() {
  if (phase_ != phase::reasoning || r_.budget < 0 || spent_ < r_.budget || ends_mid_character(seen_)) return;
  phase_ = phase::closing;
  next_forced_ = 0;
}

void reasoning_budget::reset() {
  n_reasoning_ = spent_ = 0;
  next_forced_ = 0;
  seen_.clear();
  if (!text_) {  // default-constructed: no reasoning to follow
    phase_ = phase::done;
    return;
  }
  if (!r_.starts_inside) {
    phase_ = phase::start;
    return;
  }
  phase_ = phase::reasoning;
  // The text before the reply may hold the close tag's start, which the reply's first token ends.
  if (r_.before.size() < r_.close.size()) seen_ = r_.before;
  close_if_spent();
}

}  // namespace glia
