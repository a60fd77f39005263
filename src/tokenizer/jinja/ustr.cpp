#include "tokenizer/jinja/ustr.h"

#include "core/utf8_encode.h"

#include <utf8proc.h>

#include <algorithm>

namespace glia::jinja::ustr {

uint32_t decode(std::string_view s, size_t pos, size_t& len) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t c = b(pos);
  len = 1;
  if (c < 0x80) return c;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0xDC00 + c;  // lone byte: Python's surrogateescape idea, never printable
  if (pos + n > s.size()) return 0xDC00 + c;
  for (size_t i = 1; i < n; ++i) {
    if ((b(pos + i) & 0xC0) != 0x80) return 0xDC00 + c;
    cp = (cp << 6) | (b(pos + i) & 0x3F);
  }
  static constexpr uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 0xDC00 + c;
  len = n;
  return cp;
}

void append(std::string& out, uint32_t cp) { append_utf8(cp, out); }

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
}

std::vector<size_t> boundaries(std::string_view s) {
  std::vector<size_t> b;
  b.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    b.push_back(i);
    size_t len;
    decode(s, i, len);
    i += len;
  }
  b.push_back(s.size());
  return b;
}

size_t length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    size_t len;
    decode(s, i, len);
    i += len;
  }
  return n;
}

std::vector<std::string> chars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    decode(s, i, len);
    out.emplace_back(s.substr(i, len));
    i += len;
  }
  return out;
}

bool is_space(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Unicode's simple case mappings (utf8proc: the same database Python reads). Python's str.upper()
// also applies the few one-to-many mappings of SpecialCasing (German sharp s -> "SS", ligatures)
// and lower()'s final-sigma rule; those are left out.
uint32_t to_upper(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
  return cp > 0x10FFFF ? cp : uint32_t(utf8proc_toupper(utf8proc_int32_t(cp)));
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  return cp > 0x10FFFF ? cp : uint32_t(utf8proc_tolower(utf8proc_int32_t(cp)));
}

// Python's capitalize() and title() start a word in titlecase (U+01C6 -> U+01C5, not U+01C4).
uint32_t to_title(uint32_t cp) {
  if (cp < 0x80) return to_upper(cp);
  return cp > 0x10FFFF ? cp : uint32_t(utf8proc_totitle(utf8proc_int32_t(cp)));
}

// Python's isupper/islower read the Uppercase/Lowercase properties: letters of category Lu/Ll, plus
// characters with a case mapping such as Roman numerals and circled letters.
bool is_cased_upper(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  if (cp > 0x10FFFF) return false;
  const auto cat = utf8proc_category(utf8proc_int32_t(cp));
  // Titlecase letters (Lt, e.g. U+01C5) are cased but neither upper nor lower.
  return cat == UTF8PROC_CATEGORY_LU || (cat != UTF8PROC_CATEGORY_LT && to_lower(cp) != cp);
}
bool is_titlecase(uint32_t cp) {
  return cp >= 0x80 && cp <= 0x10FFFF && utf8proc_category(utf8proc_int32_t(cp)) == UTF8PROC_CATEGORY_LT;
}
bool is_cased_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  if (cp > 0x10FFFF) return false;
  const auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_LL || (cat != UTF8PROC_CATEGORY_LT && to_upper(cp) != cp);
}

// Python's str predicates read the Unicode database; utf8proc's categories are the same data.
bool is_alpha(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if (cp > 0x10FFFF) return false;
  switch (utf8proc_category(utf8proc_int32_t(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: return true;
    default: return false;
  }
}

// str.isdecimal (and, but for superscripts and the like, isdigit): category Nd.
bool is_digit(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return cp <= 0x10FFFF && utf8proc_category(utf8proc_int32_t(cp)) == UTF8PROC_CATEGORY_ND;
}

// str.isnumeric: the categories Nd, Nl and No (Roman numerals, fractions, superscripts). Python
// also counts CJK ideographs with a numeric value (Lo); utf8proc has no numeric property for those.
bool is_numeric(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  if (cp > 0x10FFFF) return false;
  const auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

// str.isprintable, which repr() uses to decide what to escape: everything but the categories
// Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs (the ASCII space excepted).
bool is_printable(uint32_t cp) {
  if (cp < 0x7F) return cp >= 0x20;
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;  // surrogates: our stand-ins for invalid bytes
  switch (utf8proc_category(utf8proc_int32_t(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
  }
}

namespace {

template <typename F>
std::string map_chars(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = decode(s, i, len);
    if (len == 1 && cp >= 0xDC00) out += s[i];
    else append(out, f(cp));
    i += len;
  }
  return out;
}

}  // namespace

std::string upper(std::string_view s) { return map_chars(s, to_upper); }
std::string lower(std::string_view s) { return map_chars(s, to_lower); }

std::string capitalize(std::string_view s) {
  bool first = true;
  return map_chars(s, [&](uint32_t cp) {
    uint32_t r = first ? to_title(cp) : to_lower(cp);
    first = false;
    return r;
  });
}

std::string title(std::string_view s) {
  bool prev_cased = false;
  return map_chars(s, [&](uint32_t cp) {
    const bool cased = is_cased_upper(cp) || is_cased_lower(cp) || is_titlecase(cp);
    uint32_t r = cased ? (prev_cased ? to_lower(cp) : to_title(cp)) : cp;
    prev_cased = cased;
    return r;
  });
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars)
    for (size_t i = 0; i < chars->size();) {
      size_t len;
      set.push_back(decode(*chars, i, len));
      i += len;
    }
  auto strippable = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  const std::vector<size_t> b = boundaries(s);
  size_t lo = 0, hi = b.size() - 1;  // character indexes [lo, hi)
  size_t len;
  if (left)
    while (lo < hi && strippable(decode(s, b[lo], len))) ++lo;
  if (right)
    while (hi > lo && strippable(decode(s, b[hi - 1], len))) --hi;
  return std::string(s.substr(b[lo], b[hi] - b[lo]));
}

namespace {

// Whitespace-separated words with their byte ranges.
std::vector<std::pair<size_t, size_t>> words(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = 0, start = std::string_view::npos;
  while (i < s.size()) {
    size_t len;
    const bool sp = is_space(decode(s, i, len));
    if (sp && start != std::string_view::npos) out.emplace_back(start, i), start = std::string_view::npos;
    if (!sp && start == std::string_view::npos) start = i;
    i += len;
  }
  if (start != std::string_view::npos) out.emplace_back(start, s.size());
  return out;
}

}  // namespace

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    auto w = words(s);
    for (size_t k = 0; k < w.size(); ++k) {
      if (maxsplit >= 0 && int64_t(k) == maxsplit) {
        // The rest, from the start of this word, with trailing whitespace stripped (Python).
        out.push_back(strip(s.substr(w[k].first), nullptr, false, true));
        break;
      }
      out.emplace_back(s.substr(w[k].first, w[k].second - w[k].first));
    }
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (maxsplit < 0 || n < maxsplit) {
    size_t at = s.find(*sep, pos);
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, at - pos));
    pos = at + sep->size();
    ++n;
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    auto w = words(s);
    int64_t n = 0;
    size_t k = w.size();
    while (k > 0) {
      if (maxsplit >= 0 && n == maxsplit) {
        out.push_back(strip(s.substr(0, w[k - 1].second), nullptr, true, false));
        k = 0;
        break;
      }
      --k;
      out.emplace_back(s.substr(w[k].first, w[k].second - w[k].first));
      ++n;
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  size_t end = s.size();
  int64_t n = 0;
  while (maxsplit < 0 || n < maxsplit) {
    if (end < sep->size()) break;
    size_t at = s.rfind(*sep, end - sep->size());
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
    ++n;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const uint32_t cp = decode(s, i, len);
    const bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
                     cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) {
      i += len;
      continue;
    }
    size_t end = i + len;
    if (cp == '\r' && end < s.size() && s[end] == '\n') ++end;
    out.emplace_back(s.substr(start, (keepends ? end : i) - start));
    start = i = end;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    const std::vector<size_t> b = boundaries(s);
    int64_t n = 0;
    for (size_t k = 0; k + 1 < b.size(); ++k) {
      if (count < 0 || n < count) out += repl, ++n;
      out += s.substr(b[k], b[k + 1] - b[k]);
    }
    if (count < 0 || n < count) out += repl;
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out += s.substr(pos, at - pos);
    out += repl;
    pos = at + old.size();
    ++n;
  }
  out += s.substr(pos);
  return out;
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return int64_t(length(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return n;
}

int64_t find(std::string_view s, std::string_view sub, bool last) {
  size_t at = last ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return int64_t(length(s.substr(0, at)));
}

}  // namespace glia::jinja::ustr
