// DRY ("Don't Repeat Yourself") repetition penalty; the rule is stated in stages.h.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <deque>
#include <unordered_map>

#include "sampler/stages.h"

namespace glia {
namespace {

// Z-function: z[i] = length of the longest common prefix of s and s[i..] (z[0] = |s|). Linear time
// (Gusfield 1997, "Algorithms on Strings, Trees and Sequences", 1.4).
void z_function(const std::vector<int32_t>& s, std::vector<int>& z) {
  const int n = int(s.size());
  z.assign(size_t(n), 0);
  if (n == 0) return;
  z[0] = n;
  int l = 0, r = 0;  // [l, r) is the rightmost window known to match a prefix of s
  for (int i = 1; i < n; ++i) {
    int k = i < r ? std::min(r - i, z[size_t(i - l)]) : 0;
    while (i + k < n && s[size_t(k)] == s[size_t(i + k)]) ++k;
    z[size_t(i)] = k;
    if (i + k > r) {
      l = i;
      r = i + k;
    }
  }
}

class dry_stage final : public sampler_stage {
 public:
  dry_stage(const dry_params& p, token_text_fn text) : p_(p), text_(std::move(text)) {
    p_.allowed_length = std::max(p_.allowed_length, 1);
    std::erase_if(p_.sequence_breakers, [](const std::string& b) { return b.empty(); });
    for (const auto& b : p_.sequence_breakers) max_breaker_len_ = std::max(max_breaker_len_, b.size());
    if (!text_) p_.sequence_breakers.clear();
  }

  void reset() override {
    tokens_.clear();
    breaker_.clear();
    recent_.clear();
    recent_chars_ = 0;
    n_accepted_ = 0;
  }

  void accept(int32_t id) override {
    if (!enabled()) return;
    const uint64_t index = n_accepted_++;
    tokens_.push_back(id);
    breaker_.push_back(0);
    if (!p_.sequence_breakers.empty()) mark_breakers(index, text_(id));
    if (p_.penalty_last_n > 0 && tokens_.size() > size_t(p_.penalty_last_n)) {
      tokens_.pop_front();
      breaker_.pop_front();
    }
  }

  void apply(candidate_list& c) override {
    if (!enabled() || tokens_.size() < 2) return;
    const int n = int(tokens_.size());
    // Only the tokens after the last breaker can take part in a repeat.
    int rep_limit = 0;
    while (rep_limit < n && !breaker_[size_t(n - 1 - rep_limit)]) ++rep_limit;
    if (rep_limit < p_.allowed_length) return;

    // On the reversed history, z[n-1-j] is the length of the longest run of tokens ending at j that
    // equals a run ending at the last token: the repeat that tokens_[j+1] would extend.
    reversed_.assign(tokens_.rbegin(), tokens_.rend());
    z_function(reversed_, z_);
    longest_.clear();
    int clean = 0;  // consecutive non-breaker tokens ending at j
    for (int j = 0; j + 1 < n; ++j) {
      clean = breaker_[size_t(j)] ? 0 : clean + 1;
      const int len = std::min({z_[size_t(n - 1 - j)], rep_limit, clean});
      if (len < p_.allowed_length) continue;
      int& best = longest_[tokens_[size_t(j + 1)]];
      best = std::max(best, len);
    }

    bool changed = false;
    for (const auto& [id, len] : longest_) {
      if (is_breaker_token(id)) continue;
      candidate* x = c.find(id);
      if (!x) continue;
      x->logit = float(double(x->logit) - penalty(len));
      changed = true;
    }
    if (changed) c.mark_unsorted();
  }

 private:
  bool enabled() const { return p_.multiplier != 0.0f && p_.base >= 1.0f && p_.penalty_last_n != 0; }

  double penalty(int len) const {
    double exponent = len - p_.allowed_length;
    // Past log(FLT_MAX)/log(base) the power overflows a float; the token is out of reach by then.
    if (p_.base > 1.0f) exponent = std::min(exponent, std::floor(std::log(double(FLT_MAX)) / std::log(double(p_.base))));
    return std::min(double(p_.multiplier) * std::pow(double(p_.base), exponent), double(FLT_MAX));
  }

  bool is_breaker_token(int32_t id) {
    if (p_.sequence_breakers.empty()) return false;
    auto [it, inserted] = self_breaker_.try_emplace(id, false);
    if (inserted) {
      const std::string t = text_(id);
      for (const auto& b : p_.sequence_breakers) it->second = it->second || t.find(b) != std::string::npos;
    }
    return it->second;
  }

  // Marks every token that overlaps an occurrence of a breaker string ending inside the text of
  // the token just accepted (occurrences ending earlier were found when their last token came).
  void mark_breakers(uint64_t index, std::string text) {
    recent_chars_ += text.size();
    recent_.push_back({index, std::move(text)});
    joined_.clear();
    owner_.clear();
    for (const auto& [idx, t] : recent_) {
      joined_ += t;
      owner_.insert(owner_.end(), t.size(), idx);
    }
    const size_t new_start = joined_.size() - recent_.back().second.size();
    for (const auto& b : p_.sequence_breakers) {
      size_t pos = new_start + 1 > b.size() ? new_start + 1 - b.size() : 0;
      while ((pos = joined_.find(b, pos)) != std::string::npos) {
        for (size_t k = pos; k < pos + b.size(); ++k) mark(owner_[k]);
        ++pos;
      }
    }
    // Keep just enough earlier text to complete a breaker that started there.
    while (recent_.size() > 1 && recent_chars_ - recent_.front().second.size() + 1 >= max_breaker_len_) {
      recent_chars_ -= recent_.front().second.size();
      recent_.pop_front();
    }
  }

  void mark(uint64_t index) {
    const uint64_t first = n_accepted_ - tokens_.size();
    if (index >= first) breaker_[size_t(index - first)] = 1;
  }

  dry_params p_;
  token_text_fn text_;
  size_t max_breaker_len_ = 0;

  std::deque<int32_t> tokens_;   // the scanned history (last penalty_last_n accepted), oldest first
  std::deque<uint8_t> breaker_;  // per token of tokens_: takes part in a breaker occurrence
  uint64_t n_accepted_ = 0;      // tokens accepted since reset; the next one gets this index
  std::deque<std::pair<uint64_t, std::string>> recent_;  // (index, text) of the latest tokens
  size_t recent_chars_ = 0;                              // total text size in recent_
  std::unordered_map<int32_t, bool> self_breaker_;       // does the token's own text hold a breaker

  // Scratch reused between calls.
  std::string joined_;
  std::vector<uint64_t> owner_;  // token index of each byte of joined_
  std::vector<int32_t> reversed_;
  std::vector<int> z_;
  std::unordered_map<int32_t, int> longest_;  // candidate id -> longest repeat it would extend
};

}  // namespace

std::unique_ptr<sampler_stage> make_dry(const dry_params& p, token_text_fn token_text) {
  return std::make_unique<dry_stage>(p, std::move(token_text));
}

}  // namespace glia
