#include "sampler/grammar/json_schema_chars.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace glia::grammar {
namespace chars_detail {
namespace {

constexpr uint32_t surrogate_lo = 0xD800, surrogate_hi = 0xDFFF;

// How a code point is written inside a GBNF literal or class: printable ASCII as itself (those the
// notation reserves with a backslash), everything else as an escape, so the grammar is plain ASCII.
std::string gbnf_char(uint32_t c, bool in_class) {
  switch (c) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\\': return "\\\\";
    case '"': return "\\\"";
    default: break;
  }
  if (in_class && (c == ']' || c == '[' || c == '-')) return std::string("\\") + char(c);
  if (in_class && c == '^') return "\\x5E";
  if (c >= 0x20 && c < 0x7F) return std::string(1, char(c));
  if (c < 0x80) return fmt::format("\\x{:02X}", c);
  if (c <= 0xFFFF) return fmt::format("\\u{:04X}", c);
  return fmt::format("\\U{:08X}", c);
}

std::string class_body(const code_point_set& set) {
  std::string out;
  for (auto [lo, hi] : set.ranges()) {
    out += gbnf_char(lo, true);
    if (hi == lo) continue;
    if (hi > lo + 1) out += '-';
    out += gbnf_char(hi, true);
  }
  return out;
}

std::string hex_digit_class(const code_point_set& nibbles) {
  // nibbles holds values 0..15; letters are accepted in either case.
  code_point_set digits;
  for (auto [lo, hi] : nibbles.ranges())
    for (uint32_t v = lo; v <= hi; ++v) {
      if (v < 10) {
        digits.add('0' + v, '0' + v);
      } else {
        digits.add('a' + v - 10, 'a' + v - 10);
        digits.add('A' + v - 10, 'A' + v - 10);
      }
    }
  return gbnf_raw_set(digits);
}

// Length of the primary expression (literal, class, group or rule name) that starts `expr`, or 0.
size_t primary_length(std::string_view expr) {
  if (expr.empty()) return 0;
  const char first = expr[0];
  if (first == '"' || first == '[') {
    const char close = first == '"' ? '"' : ']';
    for (size_t i = 1; i < expr.size(); ++i) {
      if (expr[i] == '\\') {
        ++i;
      } else if (expr[i] == close) {
        return i + 1;
      }
    }
    return 0;
  }
  if (first == '(') {
    int depth = 0;
    for (size_t i = 0; i < expr.size(); ++i) {
      const char c = expr[i];
      if (c == '"' || c == '[') {
        const size_t n = primary_length(expr.substr(i));
        if (n == 0) return 0;
        i += n - 1;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')' && --depth == 0) {
        return i + 1;
      }
    }
    return 0;
  }
  size_t i = 0;
  while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '-')) ++i;
  return i;
}

}  // namespace
}  // namespace chars_detail

code_point_set code_point_set::range(uint32_t lo, uint32_t hi) {
  code_point_set s;
  s.add(lo, hi);
  return s;
}

void code_point_set::add(uint32_t lo, uint32_t hi) {
  using chars_detail::surrogate_hi;
  using chars_detail::surrogate_lo;
  hi = std::min(hi, max_code_point);
  if (lo > hi) return;
  if (lo <= surrogate_hi && hi >= surrogate_lo) {  // cut the surrogates out
    if (lo < surrogate_lo) add(lo, surrogate_lo - 1);
    if (hi > surrogate_hi) add(surrogate_hi + 1, hi);
    return;
  }
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  merged.reserve(ranges_.size() + 1);
  bool placed = false;
  for (auto r : ranges_) {
    if (uint64_t(r.second) + 1 < lo) {
      merged.push_back(r);
    } else if (uint64_t(hi) + 1 < r.first) {
      if (!placed) merged.emplace_back(lo, hi), placed = true;
      merged.push_back(r);
    } else {  // overlapping or adjacent: absorb
      lo = std::min(lo, r.first);
      hi = std::max(hi, r.second);
    }
  }
  if (!placed) merged.emplace_back(lo, hi);
  std::sort(merged.begin(), merged.end());
  // Ranges separated only by the surrogate gap stay apart; that is harmless.
  ranges_ = std::move(merged);
}

void code_point_set::add(const code_point_set& other) {
  for (auto [lo, hi] : other.ranges_) add(lo, hi);
}

code_point_set code_point_set::complement() const {
  code_point_set out;
  uint32_t next = 0;
  for (auto [lo, hi] : ranges_) {
    if (lo > next) out.add(next, lo - 1);
    next = hi + 1;
  }
  if (next <= max_code_point) out.add(next, max_code_point);
  return out;
}

code_point_set code_point_set::minus(const code_point_set& other) const {
  return intersect(other.complement());
}

code_point_set code_point_set::intersect(const code_point_set& other) const {
  code_point_set out;
  for (auto [a_lo, a_hi] : ranges_)
    for (auto [b_lo, b_hi] : other.ranges_) {
      const uint32_t lo = std::max(a_lo, b_lo), hi = std::min(a_hi, b_hi);
      if (lo <= hi) out.add(lo, hi);
    }
  return out;
}

bool code_point_set::contains(uint32_t c) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(c, UINT32_MAX));
  return it != ranges_.begin() && std::prev(it)->second >= c;
}

int64_t code_point_set::single() const {
  return ranges_.size() == 1 && ranges_[0].first == ranges_[0].second ? int64_t(ranges_[0].first) : -1;
}

uint64_t code_point_set::size() const {
  uint64_t n = 0;
  for (auto [lo, hi] : ranges_) n += uint64_t(hi) - lo + 1;
  return n;
}

bool decode_utf8(std::string_view text, std::u32string& out) {
  out.clear();
  for (size_t i = 0; i < text.size();) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > text.size()) return false;
    uint32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      c = (c << 6) | (b & 0x3F);
    }
    static constexpr uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min_for_len[len] || c > max_code_point || (c >= 0xD800 && c <= 0xDFFF)) return false;
    out.push_back(c);
    i += len;
  }
  return true;
}

std::string gbnf_literal(std::u32string_view text) {
  std::string out = "\"";
  for (char32_t c : text) out += chars_detail::gbnf_char(c, false);
  return out + "\"";
}

std::string gbnf_literal_utf8(std::string_view utf8_text) {
  std::u32string cps;
  decode_utf8(utf8_text, cps);
  return gbnf_literal(cps);
}

std::string gbnf_class(const code_point_set& set) {
  const code_point_set rest = set.complement();
  // A negated class also matches surrogates, which no text holds, so both spellings are exact.
  if (!rest.empty() && rest.ranges().size() < set.ranges().size())
    return fmt::format("[^{}]", chars_detail::class_body(rest));
  return fmt::format("[{}]", chars_detail::class_body(set));
}

std::string gbnf_raw_set(const code_point_set& set) {
  const int64_t one = set.single();
  if (one >= 0) return gbnf_literal(std::u32string(1, char32_t(one)));
  return gbnf_class(set);
}

std::u32string json_escaped(std::u32string_view text) {
  std::u32string out;
  for (char32_t c : text) {
    switch (c) {
      case '"': out += U"\\\""; break;
      case '\\': out += U"\\\\"; break;
      case '\b': out += U"\\b"; break;
      case '\f': out += U"\\f"; break;
      case '\n': out += U"\\n"; break;
      case '\r': out += U"\\r"; break;
      case '\t': out += U"\\t"; break;
      default:
        if (c < 0x20) {
          const std::string hex = fmt::format("\\u{:04x}", uint32_t(c));
          out.append(hex.begin(), hex.end());
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string gbnf_json_string_set(const code_point_set& set) {
  std::vector<std::string> alts;
  const code_point_set controls = code_point_set::range(0, 0x1F);
  code_point_set plain = set.minus(controls);
  plain = plain.minus(code_point_set::of('"')).minus(code_point_set::of('\\'));
  if (!plain.empty()) alts.push_back(gbnf_raw_set(plain));
  if (set.contains('"')) alts.push_back(gbnf_literal(U"\\\""));
  if (set.contains('\\')) alts.push_back(gbnf_literal(U"\\\\"));
  if (set.contains('/')) alts.push_back(gbnf_literal(U"\\/"));
  const code_point_set ctl = set.intersect(controls);
  if (!ctl.empty()) {
    std::u32string short_escapes;
    for (auto [c, letter] : {std::pair{U'\b', U'b'}, {U'\f', U'f'}, {U'\n', U'n'}, {U'\r', U'r'}, {U'\t', U't'}})
      if (ctl.contains(c)) short_escapes += letter;
    if (short_escapes.size() == 1) alts.push_back(gbnf_literal(U"\\" + short_escapes));
    if (short_escapes.size() > 1) {
      code_point_set letters;
      for (char32_t l : short_escapes) letters.add(l, l);
      alts.push_back(gbnf_literal(U"\\") + " " + gbnf_class(letters));
    }
    for (uint32_t high : {0u, 1u}) {
      const code_point_set part = ctl.intersect(code_point_set::range(high * 16, high * 16 + 15));
      if (part.empty()) continue;
      code_point_set nibbles;
      for (auto [lo, hi] : part.ranges()) nibbles.add(lo - high * 16, hi - high * 16);
      alts.push_back(gbnf_literal(high ? U"\\u001" : U"\\u000") + " " + chars_detail::hex_digit_class(nibbles));
    }
  }
  if (alts.size() == 1 && !gbnf_needs_group(alts[0])) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

bool gbnf_needs_group(std::string_view expr) {
  const size_t n = chars_detail::primary_length(expr);
  return n == 0 || n != expr.size();
}

}  // namespace glia::grammar
