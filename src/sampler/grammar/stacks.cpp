#include "sampler/grammar/stacks.h"

#include <algorithm>
#include <unordered_set>

#include "sampler/grammar/utf8_steps.h"

namespace glia::grammar {
namespace {

struct stack_hash {
  size_t operator()(const stack& s) const {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t p : s) h = (h ^ p) * 1099511628211ull;
    return size_t(h);
  }
};

// Expands stacks until a character set is on top of each (or it is empty): a rule reference on top
// is replaced by each of the rule's alternatives. A position whose next element ends its alternative
// is not kept under the reference (tail position), so `x*` loops never deepen the stack, and a stack
// already expanded is not expanded again, so loops through rules that match nothing (`("a"?)*`)
// end. Iterative: a chain of 10^5 such rules must not recurse 10^5 deep.
class expander {
 public:
  explicit expander(const compiled& g) : g_(g) {}

  void add(stack s) {
    positions_ += s.size() + 1;
    todo_.push_back(std::move(s));
  }

  std::optional<stack_set> run() {
    while (!todo_.empty()) {
      stack s = std::move(todo_.back());
      todo_.pop_back();
      if (++steps_ > max_expand_steps || s.size() > max_stack_depth || positions_ > max_expand_positions) return std::nullopt;
      if (s.empty() || g_.elements[s.back()].type == element::kind::chars) {
        if (done_.insert(s).second && done_.size() > max_stacks) return std::nullopt;
        continue;
      }
      if (!seen_.insert(s).second) continue;
      const uint32_t p = s.back();
      const uint32_t rule = g_.elements[p].rule;
      s.pop_back();
      if (g_.elements[p + 1].type != element::kind::end) s.push_back(p + 1);
      for (uint32_t a : g_.alt_start[rule]) {
        // Counted as copied, before the copy: 60,000 alternatives under a stack 1,000 deep must not
        // be written out before the bound is seen.
        positions_ += s.size() + 1;
        if (positions_ > max_expand_positions) return std::nullopt;
        stack t = s;
        if (g_.elements[a].type != element::kind::end) t.push_back(a);
        todo_.push_back(std::move(t));
      }
    }
    stack_set out(done_.begin(), done_.end());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  const compiled& g_;
  std::vector<stack> todo_;
  std::unordered_set<stack, stack_hash> seen_, done_;
  size_t steps_ = 0;
  size_t positions_ = 0;
};

}  // namespace

std::optional<stack_set> initial_stacks(const compiled& g) {
  if (!g.start.empty()) return g.start;
  expander x(g);
  for (uint32_t a : g.alt_start[g.root]) {
    stack s;
    if (g.elements[a].type != element::kind::end) s.push_back(a);
    x.add(std::move(s));
  }
  return x.run();
}

std::optional<stack_set> advance(const compiled& g, const stack_set& from, uint32_t cp) {
  expander x(g);
  for (const stack& st : from) {
    if (st.empty() || !char_matches(g.elements[st.back()], cp)) continue;
    stack s(st.begin(), st.end() - 1);
    const uint32_t next = st.back() + 1;
    if (g.elements[next].type != element::kind::end) s.push_back(next);
    x.add(std::move(s));
  }
  return x.run();
}

bool is_complete(const stack_set& s) {
  return !s.empty() && s.front().empty();  // sorted: the empty stack comes first
}

bool char_matches(const element& e, uint32_t cp) {
  bool in = false;
  for (const auto& [lo, hi] : e.ranges)
    if (cp >= lo && cp <= hi) {
      in = true;
      break;
    }
  return in != e.negated;
}

bool range_may_match(const element& e, uint32_t lo, uint32_t hi) {
  if (!e.negated) {
    for (const auto& [a, b] : e.ranges)
      if (a <= hi && b >= lo) return true;
    return false;
  }
  // Negated: some code point of [lo, hi] lies outside every range. Walk up from lo past ranges
  // that cover it.
  uint32_t c = lo;
  for (bool moved = true; moved && c <= hi;) {
    moved = false;
    for (const auto& [a, b] : e.ranges)
      if (c >= a && c <= b) {
        if (b >= hi) return false;
        c = b + 1;
        moved = true;
      }
  }
  return c <= hi;
}

text_check check_text(const compiled& g, std::string_view text) {
  std::optional<stack_set> s = initial_stacks(g);
  if (!s) return {text_check::verdict::too_complex, 0};
  utf8_partial p;
  size_t start = 0;  // the current character's first byte
  for (size_t i = 0; i < text.size(); ++i) {
    if (p.empty()) start = i;
    uint32_t cp = 0;
    const utf8_step st = feed_utf8(p, uint8_t(text[i]), cp);
    if (st == utf8_step::invalid) return {text_check::verdict::invalid_utf8, start};
    if (st == utf8_step::done) {
      std::optional<stack_set> next = advance(g, *s, cp);
      if (!next) return {text_check::verdict::too_complex, start};
      if (next->empty()) return {text_check::verdict::leaves, start};
      s = std::move(next);
    }
  }
  if (!p.empty()) {
    const auto [lo, hi] = utf8_partial_range(p);
    for (const stack& st : *s)
      if (!st.empty() && range_may_match(g.elements[st.back()], lo, hi)) return {text_check::verdict::prefix, 0};
    return {text_check::verdict::leaves, start};
  }
  return {is_complete(*s) ? text_check::verdict::sentence : text_check::verdict::prefix, 0};
}

bool matches(const compiled& g, std::string_view text) { return check_text(g, text).result == text_check::verdict::sentence; }

bool is_prefix(const compiled& g, std::string_view text) {
  const auto r = check_text(g, text).result;
  return r == text_check::verdict::sentence || r == text_check::verdict::prefix;
}

}  // namespace glia::grammar
