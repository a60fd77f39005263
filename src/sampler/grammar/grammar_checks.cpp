#include "sampler/grammar/grammar_checks.h"

#include <algorithm>
#include <vector>

namespace glia::grammar {
namespace {

// Rules with an alternative made only of rules already found, to a fixed point: a worklist over
// "alternative a waits for k more of its references", linear in the grammar's size (repeated passes
// are quadratic on a chain of 10^5 rules). chars_disqualify: an alternative holding a character set
// never counts (the rules that can match the empty string); else character sets count as matched
// (the rules that can match some text, i.e. finish).
std::vector<bool> rules_by_worklist(const compiled& g, bool chars_disqualify) {
  const size_t n = g.alt_start.size();
  std::vector<bool> found_rule(n, false);
  struct alt_wait {
    uint32_t rule;
    uint32_t missing;  // references in the alternative not yet found
  };
  std::vector<alt_wait> alts;
  std::vector<std::vector<uint32_t>> waiting(n);  // rule -> alternatives that reference it
  std::vector<uint32_t> found;
  auto mark = [&](uint32_t r) {
    if (!found_rule[r]) {
      found_rule[r] = true;
      found.push_back(r);
    }
  };
  for (uint32_t r = 0; r < n; ++r)
    for (uint32_t a : g.alt_start[r]) {
      bool chars = false;
      uint32_t refs = 0;
      for (uint32_t p = a; g.elements[p].type != element::kind::end; ++p) {
        if (g.elements[p].type == element::kind::chars) chars = true;
        else ++refs;
      }
      if (chars && chars_disqualify) continue;
      if (refs == 0) {
        mark(r);
        continue;
      }
      const uint32_t id = uint32_t(alts.size());
      alts.push_back({r, refs});
      for (uint32_t p = a; g.elements[p].type != element::kind::end; ++p)
        if (g.elements[p].type == element::kind::rule_ref) waiting[g.elements[p].rule].push_back(id);
    }
  while (!found.empty()) {
    const uint32_t r = found.back();
    found.pop_back();
    for (uint32_t id : waiting[r])
      if (--alts[id].missing == 0) mark(alts[id].rule);
  }
  return found_rule;
}

// How a message names a rule: a generated one (a group or a repetition) by the rule it is in.
std::string rule_label(const compiled& g, uint32_t r) {
  const std::string& name = g.rule_names[r];
  if (r >= g.generated.size() || !g.generated[r]) return fmt::format("rule '{}'", name);
  return fmt::format("a group or repetition in rule '{}'", name.substr(0, name.rfind('_')));
}

// The rules the root can reach, the root included.
std::vector<bool> reachable(const compiled& g) {
  std::vector<bool> reached(g.alt_start.size(), false);
  std::vector<uint32_t> todo{g.root};
  reached[g.root] = true;
  while (!todo.empty()) {
    const uint32_t r = todo.back();
    todo.pop_back();
    for (uint32_t a : g.alt_start[r])
      for (uint32_t p = a; g.elements[p].type != element::kind::end; ++p)
        if (g.elements[p].type == element::kind::rule_ref && !reached[g.elements[p].rule]) {
          reached[g.elements[p].rule] = true;
          todo.push_back(g.elements[p].rule);
        }
  }
  return reached;
}

// Whether a character set holds no character (of U+0000..U+10FFFF without the surrogates, which
// are no characters: text never holds them).
bool matches_nothing(const element& e) {
  std::vector<std::pair<uint32_t, uint32_t>> r;
  for (const auto& [lo, hi] : e.ranges)
    if (lo <= hi && lo <= 0x10FFFF) r.emplace_back(lo, std::min<uint32_t>(hi, 0x10FFFF));
  r.emplace_back(0xD800, 0xDFFF);  // as if listed: a set is judged on the characters alone
  std::sort(r.begin(), r.end());
  uint32_t next = 0;  // the first code point not yet covered
  bool character_listed = false;
  for (const auto& [lo, hi] : r) {
    if (lo > next && e.negated) return false;  // a gap: a character the negation keeps
    if (!(lo >= 0xD800 && hi <= 0xDFFF)) character_listed = true;
    next = std::max(next, hi + 1);
  }
  return e.negated ? next > 0x10FFFF : !character_listed;
}

struct first_edge {
  uint32_t to;
  bool tail;  // the reference ends its alternative: expanding it leaves nothing under it
};

}  // namespace

status check_char_classes(const compiled& g) {
  const std::vector<bool> reached = reachable(g);
  for (uint32_t r = 0; r < g.alt_start.size(); ++r) {
    if (!reached[r]) continue;
    for (uint32_t a : g.alt_start[r])
      for (uint32_t p = a; g.elements[p].type != element::kind::end; ++p)
        if (g.elements[p].type == element::kind::chars && matches_nothing(g.elements[p]))
          return make_error("grammar: {} has a character class that matches no character", rule_label(g, r));
  }
  return {};
}

status check_finishes(const compiled& g) {
  const std::vector<bool> finishes = rules_by_worklist(g, false);
  const std::vector<bool> reached = reachable(g);
  std::vector<uint32_t> stuck;
  for (uint32_t r = 0; r < g.alt_start.size(); ++r)
    if (reached[r] && !finishes[r]) stuck.push_back(r);
  if (stuck.empty()) return {};
  // Name the rule at the bottom of it: one whose unfinishing references are only itself.
  uint32_t culprit = stuck.front();
  for (uint32_t r : stuck) {
    bool only_self = true;
    for (uint32_t a : g.alt_start[r])
      for (uint32_t p = a; g.elements[p].type != element::kind::end; ++p)
        if (g.elements[p].type == element::kind::rule_ref && !finishes[g.elements[p].rule] && g.elements[p].rule != r) only_self = false;
    if (only_self) {
      culprit = r;
      break;
    }
  }
  return make_error("grammar: {} can never finish matching (each of its alternatives needs it again)", rule_label(g, culprit));
}

// A rule that can reach itself before a character is a cycle in the graph of "rules an alternative
// can begin with". Following a cycle whose references are all in tail position replaces the top of
// the stack and comes back to a stack already seen, which expansion skips (`("a"?)*`); one reference
// with more after it pushes that remainder on every turn, and the stack grows without end
// (`expr ::= expr "+" term`). So a cycle is refused when one of its edges is not a tail: found as an
// edge inside a strongly connected component (Tarjan's algorithm, iterative: 10^5 chained rules).
status check_left_recursion(const compiled& g) {
  const size_t n = g.alt_start.size();
  const std::vector<bool> nullable = rules_by_worklist(g, true);
  std::vector<std::vector<first_edge>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t a : g.alt_start[r])
      for (uint32_t p = a; g.elements[p].type == element::kind::rule_ref; ++p) {
        first[r].push_back({g.elements[p].rule, g.elements[p + 1].type == element::kind::end});
        if (!nullable[g.elements[p].rule]) break;
      }

  constexpr uint32_t unvisited = UINT32_MAX;
  std::vector<uint32_t> index(n, unvisited), low(n, 0), component(n, unvisited);
  std::vector<bool> on_stack(n, false);
  std::vector<uint32_t> scc_stack;
  uint32_t next_index = 0, n_components = 0;
  struct frame {
    uint32_t rule;
    size_t edge;
  };
  for (uint32_t start = 0; start < n; ++start) {
    if (index[start] != unvisited) continue;
    std::vector<frame> path{{start, 0}};
    index[start] = low[start] = next_index++;
    scc_stack.push_back(start);
    on_stack[start] = true;
    while (!path.empty()) {
      frame& f = path.back();
      if (f.edge < first[f.rule].size()) {
        const uint32_t to = first[f.rule][f.edge++].to;
        if (index[to] == unvisited) {
          index[to] = low[to] = next_index++;
          scc_stack.push_back(to);
          on_stack[to] = true;
          path.push_back({to, 0});
        } else if (on_stack[to]) {
          low[f.rule] = std::min(low[f.rule], index[to]);
        }
        continue;
      }
      const uint32_t r = f.rule;
      path.pop_back();
      if (!path.empty()) low[path.back().rule] = std::min(low[path.back().rule], low[r]);
      if (low[r] == index[r]) {
        for (uint32_t m = unvisited; m != r;) {
          m = scc_stack.back();
          scc_stack.pop_back();
          on_stack[m] = false;
          component[m] = n_components;
        }
        ++n_components;
      }
    }
  }
  for (uint32_t r = 0; r < n; ++r)
    for (const first_edge& e : first[r])
      if (component[e.to] == component[r] && !e.tail)
        return make_error("grammar: {} is left-recursive (it can reach itself before matching a character, with more to "
                          "match after it)",
                          rule_label(g, r));
  return {};
}

}  // namespace glia::grammar
