#include "sampler/grammar/grammar_checks.h"

#include <vector>

namespace glia::grammar {

status check_left_recursion(const compiled& g) {
  const size_t n = g.alt_start.size();
  // Rules that can match the empty string, to a fixed point.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t a : g.alt_start[r]) {
        bool all = true;
        for (uint32_t p = a; g.elements[p].type != element::kind::end; ++p)
          if (g.elements[p].type != element::kind::rule_ref || !nullable[g.elements[p].rule]) {
            all = false;
            break;
          }
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  // Rules each rule can begin with: references preceded only by nullable references.
  std::vector<std::vector<uint32_t>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t a : g.alt_start[r])
      for (uint32_t p = a; g.elements[p].type == element::kind::rule_ref; ++p) {
        first[r].push_back(g.elements[p].rule);
        if (!nullable[g.elements[p].rule]) break;
      }
  // A cycle in that graph (iterative depth-first search: a hostile grammar may chain 10^5 rules).
  std::vector<uint8_t> colour(n, 0);  // 0 new, 1 on the path, 2 done
  for (size_t start = 0; start < n; ++start) {
    if (colour[start]) continue;
    std::vector<std::pair<uint32_t, size_t>> path{{uint32_t(start), 0}};
    colour[start] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next < first[r].size()) {
        const uint32_t to = first[r][next++];
        if (colour[to] == 1) return make_error("grammar: rule '{}' is left-recursive (it can reach itself before matching a character)", g.rule_names[to]);
        if (colour[to] == 0) {
          colour[to] = 1;
          path.emplace_back(to, 0);
        }
      } else {
        colour[r] = 2;
        path.pop_back();
      }
    }
  }
  return {};
}

}  // namespace glia::grammar
