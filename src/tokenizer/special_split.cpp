#include "tokenizer/special_split.h"

#include <algorithm>

namespace glia::tok {

namespace {

// The C locale's isspace, without its undefined behaviour for bytes above 0x7F.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// Splits one plain fragment at every occurrence of special token `id` and appends the pieces.
void split_fragment(std::string_view rest, int32_t id, std::string_view special, token_attr attr,
                    std::vector<fragment>& out) {
  while (!rest.empty()) {
    const size_t m = rest.find(special);
    if (m == std::string_view::npos) break;
    std::string_view left = rest.substr(0, m);
    if (has_any(attr, token_attr::lstrip))
      while (!left.empty() && is_space(left.back())) left.remove_suffix(1);
    if (!left.empty()) out.push_back({left});
    out.push_back({{}, id});
    rest = rest.substr(m + special.size());
    if (has_any(attr, token_attr::rstrip))
      while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
  }
  if (!rest.empty()) out.push_back({rest});
}

}  // namespace

std::vector<fragment> split_special(const vocab& v, std::string_view text, bool parse_special) {
  std::vector<fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({text});

  std::vector<fragment> next;
  for (int32_t id : v.special_tokens) {
    const token_data& t = v.tokens[id];
    if (!parse_special && has_any(t.attr, token_attr::control | token_attr::unknown)) continue;
    const bool occurs = std::any_of(frags.begin(), frags.end(), [&](const fragment& f) {
      return !f.is_token() && f.text.find(t.text) != std::string_view::npos;
    });
    if (!occurs) continue;
    next.clear();
    for (const fragment& f : frags) {
      if (f.is_token()) {
        next.push_back(f);
      } else {
        split_fragment(f.text, id, t.text, t.attr, next);
      }
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace glia::tok
