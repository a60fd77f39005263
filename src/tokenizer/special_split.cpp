#include "tokenizer/special_split.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace glia::tok {

namespace {

// The C locale's isspace, without its undefined behaviour for bytes above 0x7F (llama.cpp).
bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// JavaScript's trim() set (transformers.js strips around lstrip / rstrip tokens with trimEnd/trimStart).
bool is_js_space(uint32_t cp) {
  return (cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

std::string_view trim_end(std::string_view s, special_match m) {
  if (m == special_match::longest_token_first) {
    while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
    return s;
  }
  // Walk forward (UTF-8 cannot be decoded backwards reliably when ill-formed).
  size_t keep = 0;
  for (size_t pos = 0; pos < s.size();) {
    const uint32_t cp = next_codepoint(s, pos);
    if (!is_js_space(cp)) keep = pos;
  }
  return s.substr(0, keep);
}

std::string_view trim_start(std::string_view s, special_match m) {
  if (m == special_match::longest_token_first) {
    while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
    return s;
  }
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!is_js_space(next_codepoint(s, next))) break;
    pos = next;
  }
  return s.substr(pos);
}

}  // namespace

special_splitter::special_splitter(const vocab& v) : v_(v) {
  nodes_.emplace_back();
  for (int32_t id : v.special_tokens) {
    const std::string& t = v.tokens[id].text;
    if (t.empty()) continue;
    first_byte_[static_cast<uint8_t>(t[0])] = true;
    int32_t n = 0;
    for (char ch : t) {
      const auto b = static_cast<uint8_t>(ch);
      int32_t c = child(n, b);
      if (c < 0) {
        c = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        auto& next = nodes_[n].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t(0))), {b, c});
      }
      n = c;
    }
    // Two special tokens with one text cannot exist (texts are unique); keep the first anyway.
    if (nodes_[n].token == no_token) nodes_[n].token = id;
  }
}

int32_t special_splitter::child(int32_t n, uint8_t b) const {
  const auto& next = nodes_[n].next;
  auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t(0)));
  return it != next.end() && it->first == b ? it->second : -1;
}

bool special_splitter::usable(int32_t id, bool parse_special) const {
  return parse_special || !has_any(v_.tokens[id].attr, token_attr::control | token_attr::unknown);
}

template <typename F>
void special_splitter::matches_at(std::string_view text, size_t pos, const F& f) const {
  if (!first_byte_[static_cast<uint8_t>(text[pos])]) return;
  int32_t n = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    n = child(n, static_cast<uint8_t>(text[i]));
    if (n < 0) return;
    if (nodes_[n].token != no_token) f(nodes_[n].token, i + 1 - pos);
  }
}

std::vector<fragment> special_splitter::split(std::string_view text, bool parse_special) const {
  if (text.empty()) return {};
  if (v_.matching == special_match::leftmost_longest) return split_leftmost(text, parse_special);
  return split_longest_first(text, parse_special);
}

std::vector<fragment> special_splitter::split_leftmost(std::string_view text, bool parse_special) const {
  std::vector<fragment> frags;
  size_t start = 0;  // start of the pending plain text
  bool strip_next = false;
  auto push_text = [&](std::string_view t) {
    if (strip_next) t = trim_start(t, v_.matching);
    strip_next = false;
    if (!t.empty()) frags.push_back({t});
  };
  for (size_t pos = 0; pos < text.size();) {
    int32_t best = no_token;
    size_t best_len = 0;
    matches_at(text, pos, [&](int32_t id, size_t len) {
      if (usable(id, parse_special)) best = id, best_len = len;  // later = longer
    });
    if (best == no_token) {
      ++pos;
      continue;
    }
    const token_attr attr = v_.tokens[best].attr;
    std::string_view left = text.substr(start, pos - start);
    if (has_any(attr, token_attr::lstrip)) left = trim_end(left, v_.matching);
    push_text(left);
    frags.push_back({{}, best});
    strip_next = has_any(attr, token_attr::rstrip);
    pos += best_len;
    start = pos;
  }
  push_text(text.substr(start));
  return frags;
}

// llama.cpp's order (every token, longest first, over all fragments), restricted to the tokens that
// occur in the text at all; the trie finds those in one pass.
std::vector<fragment> special_splitter::split_longest_first(std::string_view text, bool parse_special) const {
  std::vector<int32_t> present;
  for (size_t pos = 0; pos < text.size(); ++pos)
    matches_at(text, pos, [&](int32_t id, size_t) {
      if (usable(id, parse_special)) present.push_back(id);
    });
  std::vector<fragment> frags{{text}};
  if (present.empty()) return frags;
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());

  std::vector<fragment> next;
  for (int32_t id : v_.special_tokens) {
    if (!std::binary_search(present.begin(), present.end(), id)) continue;
    const token_data& t = v_.tokens[id];
    next.clear();
    for (const fragment& f : frags) {
      if (f.is_token()) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      while (!rest.empty()) {
        const size_t m = rest.find(t.text);
        if (m == std::string_view::npos) break;
        std::string_view left = rest.substr(0, m);
        if (has_any(t.attr, token_attr::lstrip)) left = trim_end(left, v_.matching);
        if (!left.empty()) next.push_back({left});
        next.push_back({{}, id});
        rest = rest.substr(m + t.text.size());
        if (has_any(t.attr, token_attr::rstrip)) rest = trim_start(rest, v_.matching);
      }
      if (!rest.empty()) next.push_back({rest});
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace glia::tok
