#include "sampler/grammar/stacks.h"

#include <algorithm>

#include "sampler/grammar/utf8_steps.h"

namespace glia::grammar {
namespace {

// Pushes onto `out` every stack `s` expands to: rule references on top are replaced by each of the
// rule's alternatives until a character set is on top (or the stack is empty). A position whose next
// element ends its alternative is not kept under the reference (tail position), so `x*` loops never
// deepen the stack.
void expand(const compiled& g, stack& s, stack_set& out) {
  if (out.size() >= max_stacks || s.size() > max_stack_depth) return;
  if (s.empty()) {
    out.push_back(s);
    return;
  }
  const uint32_t p = s.back();
  const element& e = g.elements[p];
  if (e.type == element::kind::chars) {
    out.push_back(s);
    return;
  }
  // A reference (positions on stacks are never ends).
  s.pop_back();
  const bool has_next = g.elements[p + 1].type != element::kind::end;
  if (has_next) s.push_back(p + 1);
  for (uint32_t a : g.alt_start[e.rule]) {
    const bool empty_alt = g.elements[a].type == element::kind::end;
    if (!empty_alt) s.push_back(a);
    expand(g, s, out);
    if (!empty_alt) s.pop_back();
  }
  if (has_next) s.pop_back();
  s.push_back(p);
}

void normalise(stack_set& s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
}

}  // namespace

stack_set initial_stacks(const compiled& g) {
  stack_set out;
  for (uint32_t a : g.alt_start[g.root]) {
    stack s;
    if (g.elements[a].type != element::kind::end) s.push_back(a);
    expand(g, s, out);
  }
  normalise(out);
  return out;
}

stack_set advance(const compiled& g, const stack_set& from, uint32_t cp) {
  stack_set out;
  stack s;
  for (const stack& st : from) {
    if (st.empty() || !char_matches(g.elements[st.back()], cp)) continue;
    s.assign(st.begin(), st.end() - 1);
    const uint32_t next = st.back() + 1;
    if (g.elements[next].type != element::kind::end) s.push_back(next);
    expand(g, s, out);
  }
  normalise(out);
  return out;
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
  stack_set s = initial_stacks(g);
  utf8_partial p;
  size_t start = 0;  // the current character's first byte
  for (size_t i = 0; i < text.size(); ++i) {
    if (p.empty()) start = i;
    uint32_t cp = 0;
    const utf8_step st = feed_utf8(p, uint8_t(text[i]), cp);
    if (st == utf8_step::invalid) return {text_check::verdict::invalid_utf8, start};
    if (st == utf8_step::done) {
      stack_set next = advance(g, s, cp);
      if (next.empty()) return {text_check::verdict::leaves, start};
      s = std::move(next);
    }
  }
  if (!p.empty()) {
    const auto [lo, hi] = utf8_partial_range(p);
    for (const stack& st : s)
      if (!st.empty() && range_may_match(g.elements[st.back()], lo, hi)) return {text_check::verdict::prefix, 0};
    return {text_check::verdict::leaves, start};
  }
  return {is_complete(s) ? text_check::verdict::sentence : text_check::verdict::prefix, 0};
}

bool matches(const compiled& g, std::string_view text) { return check_text(g, text).result == text_check::verdict::sentence; }

bool is_prefix(const compiled& g, std::string_view text) {
  const auto r = check_text(g, text).result;
  return r == text_check::verdict::sentence || r == text_check::verdict::prefix;
}

}  // namespace glia::grammar
