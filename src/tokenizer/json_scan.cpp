#include "tokenizer/json_scan.h"

#include <cctype>
#include <span>

#include "tokenizer/utf8.h"

namespace glia::tok::json_scan {

namespace {

void skip_ws(std::string_view d, size_t& p) {
  while (p < d.size() && (d[p] == ' ' || d[p] == '\n' || d[p] == '\r' || d[p] == '\t')) ++p;
}

error at(size_t pos, std::string_view what) { return make_error("JSON at byte {}: {}", pos, what); }

status expect(std::string_view d, size_t& p, char c) {
  skip_ws(d, p);
  if (p >= d.size() || d[p] != c) return at(p, fmt::format("expected '{}'", c));
  ++p;
  return {};
}

int hex4(std::string_view d, size_t p) {
  if (p + 4 > d.size()) return -1;
  int v = 0;
  for (size_t i = p; i < p + 4; ++i) {
    const char c = d[i];
    const int n = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (n < 0) return -1;
    v = v * 16 + n;
  }
  return v;
}

status read_int(std::string_view d, size_t& p, int64_t& out) {
  skip_ws(d, p);
  const size_t start = p;
  bool neg = false;
  if (p < d.size() && d[p] == '-') neg = true, ++p;
  if (p >= d.size() || d[p] < '0' || d[p] > '9') return at(start, "expected an integer");
  int64_t v = 0;
  while (p < d.size() && d[p] >= '0' && d[p] <= '9') {
    if (v > (int64_t(1) << 40)) return at(start, "integer too large");
    v = v * 10 + (d[p++] - '0');
  }
  if (p < d.size() && (d[p] == '.' || d[p] == 'e' || d[p] == 'E')) return at(start, "expected an integer");
  out = neg ? -v : v;
  return {};
}

}  // namespace

status read_string(std::string_view d, size_t& p, std::string& out) {
  skip_ws(d, p);
  if (p >= d.size() || d[p] != '"') return at(p, "expected a string");
  const size_t start = ++p;
  out.clear();
  // Fast path: no escapes.
  size_t q = p;
  while (q < d.size() && d[q] != '"' && d[q] != '\\' && static_cast<uint8_t>(d[q]) >= 0x20) ++q;
  out.assign(d.data() + p, q - p);
  p = q;
  while (p < d.size() && d[p] != '"') {
    const char c = d[p];
    if (static_cast<uint8_t>(c) < 0x20) return at(p, "control character in a string");
    if (c != '\\') {
      out += c;
      ++p;
      continue;
    }
    if (p + 1 >= d.size()) break;
    const char e = d[p + 1];
    p += 2;
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        int cp = hex4(d, p);
        if (cp < 0) return at(p, "bad \\u escape");
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && p + 6 <= d.size() && d[p] == '\\' && d[p + 1] == 'u') {
          const int lo = hex4(d, p + 2);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
        }
        // A lone surrogate has no UTF-8 form; it becomes U+FFFD, as a decoder of the text would make it.
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
        append_utf8(static_cast<uint32_t>(cp), out);
        break;
      }
      default: return at(p - 1, "bad escape");
    }
  }
  if (p >= d.size()) return at(start - 1, "unterminated string");
  ++p;  // closing quote
  if (!is_valid_utf8(out)) return at(start - 1, "string is not valid UTF-8");
  return {};
}

// Skips a string without decoding it (read_string validates what is read).
status skip_string(std::string_view d, size_t& p) {
  const size_t start = p++;
  while (p < d.size()) {
    const char c = d[p];
    if (c == '"') return ++p, status{};
    if (c == '\\') {
      p += 2;
      continue;
    }
    if (static_cast<uint8_t>(c) < 0x20) return at(p, "control character in a string");
    ++p;
  }
  return at(start, "unterminated string");
}

namespace {

// Nesting is bounded because skipping recurses: "[[[[..." 100k deep in a hostile tokenizer.json
// would otherwise overflow the stack. Real files nest under 10 levels.
constexpr int max_nesting = 512;

status skip_value_at(std::string_view d, size_t& p, int depth) {
  skip_ws(d, p);
  if (p >= d.size()) return at(p, "expected a value");
  const char c = d[p];
  if (c == '"') return skip_string(d, p);
  if (c == '{' || c == '[') {
    if (depth >= max_nesting) return at(p, fmt::format("arrays/objects nest deeper than {}", max_nesting));
    const char close = c == '{' ? '}' : ']';
    ++p;
    skip_ws(d, p);
    if (p < d.size() && d[p] == close) return ++p, status{};
    for (;;) {
      if (c == '{') {
        skip_ws(d, p);
        if (p >= d.size() || d[p] != '"') return at(p, "expected a string");
        GLIA_TRY(skip_string(d, p));
        GLIA_TRY(expect(d, p, ':'));
      }
      GLIA_TRY(skip_value_at(d, p, depth + 1));
      skip_ws(d, p);
      if (p < d.size() && d[p] == ',') {
        ++p;
        continue;
      }
      return expect(d, p, close);
    }
  }
  // A number or a literal: its characters up to a delimiter.
  const size_t start = p;
  while (p < d.size() && (std::isalnum(static_cast<unsigned char>(d[p])) || d[p] == '-' || d[p] == '+' || d[p] == '.')) ++p;
  if (p == start) return at(p, "expected a value");
  return {};
}

}  // namespace

status skip_value(std::string_view d, size_t& p) { return skip_value_at(d, p, 0); }

status find_members(std::string_view d, size_t p, std::span<const std::string_view> keys,
                    std::span<std::optional<span>> out) {
  GLIA_TRY(expect(d, p, '{'));
  skip_ws(d, p);
  if (p < d.size() && d[p] == '}') return {};
  std::string k;
  for (;;) {
    GLIA_TRY(read_string(d, p, k));
    GLIA_TRY(expect(d, p, ':'));
    skip_ws(d, p);
    const size_t begin = p;
    GLIA_TRY(skip_value(d, p));
    for (size_t i = 0; i < keys.size(); ++i)
      if (k == keys[i]) out[i] = span{begin, p};
    skip_ws(d, p);
    if (p < d.size() && d[p] == ',') {
      ++p;
      continue;
    }
    return expect(d, p, '}');
  }
}

status for_each_text_id(std::string_view d, span s, const std::function<status(std::string&&, int64_t)>& f) {
  size_t p = s.begin;
  GLIA_TRY(expect(d, p, '{'));
  skip_ws(d, p);
  if (p < d.size() && d[p] == '}') return {};
  std::string k;
  for (;;) {
    GLIA_TRY(read_string(d, p, k));
    GLIA_TRY(expect(d, p, ':'));
    int64_t id = 0;
    GLIA_TRY(read_int(d, p, id));
    GLIA_TRY(f(std::move(k), id));
    skip_ws(d, p);
    if (p < s.end && d[p] == ',') {
      ++p;
      continue;
    }
    return expect(d, p, '}');
  }
}

status for_each_merge(std::string_view d, span s, const std::function<status(size_t, std::string&&, std::string&&)>& f) {
  size_t p = s.begin;
  GLIA_TRY(expect(d, p, '['));
  skip_ws(d, p);
  if (p < d.size() && d[p] == ']') return {};
  std::string a, b;
  for (size_t i = 0;; ++i) {
    skip_ws(d, p);
    if (p < d.size() && d[p] == '[') {  // ["left", "right"]
      ++p;
      GLIA_TRY(read_string(d, p, a));
      GLIA_TRY(expect(d, p, ','));
      GLIA_TRY(read_string(d, p, b));
      GLIA_TRY(expect(d, p, ']'));
    } else {  // "left right"
      GLIA_TRY(read_string(d, p, a));
      const size_t sp = a.find(' ');
      if (sp == std::string::npos || a.find(' ', sp + 1) != std::string::npos)
        return make_error("model.merges[{}] = '{}': expected two parts separated by one space", i, a);
      b = a.substr(sp + 1);
      a.resize(sp);
    }
    if (a.empty() || b.empty()) return make_error("model.merges[{}]: a merge needs two non-empty parts", i);
    GLIA_TRY(f(i, std::move(a), std::move(b)));
    skip_ws(d, p);
    if (p < s.end && d[p] == ',') {
      ++p;
      continue;
    }
    return expect(d, p, ']');
  }
}

}  // namespace glia::tok::json_scan
