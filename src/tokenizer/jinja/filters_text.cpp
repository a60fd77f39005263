// Jinja2's builtin filters over strings and numbers. Text filters apply str() to their input first,
// as Jinja's soft_str does (so Undefined gives "" and None gives "None").
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/jinja/filters.h"
#include "core/status.h"
#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {
namespace {

result<value> text_only(const value& v, call_args& a, const char* name, std::string (*f)(std::string_view)) {
  arg_reader r(name, a, {});
  GLIA_TRY(r.check());
  return value::string(f(to_str(v)));
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Jinja's title filter: upper-case the first character after any of - whitespace ( { [ <.
std::string jinja_title(std::string_view s) {
  std::string out;
  bool start = true;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const uint32_t cp = ustr::decode(s, i, len);
    const bool sep = ustr::is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (len == 1 && cp >= 0xDC00) out += s[i];
    else ustr::append(out, sep ? cp : start ? ustr::to_upper(cp) : ustr::to_lower(cp));
    start = sep;
    i += len;
  }
  return out;
}

result<value> f_trim(interpreter&, const value& v, call_args& a) {
  arg_reader r("trim", a, {"chars"});
  GLIA_TRY(r.check());
  const value* chars = r.get(0);
  if (chars && !chars->is_none() && !chars->is_string()) return make_error("TypeError: strip arg must be None or str");
  return value::string(ustr::strip(to_str(v), chars && chars->is_string() ? &chars->str() : nullptr, true, true));
}

result<value> f_replace(interpreter& in, const value& v, call_args& a) {
  arg_reader r("replace", a, {"old", "new", "count"});
  GLIA_TRY(r.check());
  if (!r.get(0) || !r.get(1)) return make_error("TypeError: replace() missing required arguments");
  const std::string s = to_str(v), old = to_str(*r.get(0)), repl = to_str(*r.get(1));
  int64_t count = -1;
  if (const value* c = r.get(2); c && !c->is_none()) {
    if (!c->is_int() && !c->is_bool()) return make_error("TypeError: replace() count must be an integer");
    count = c->int_like();
  }
  const int64_t hits = old.empty() ? int64_t(ustr::length(s)) + 1 : ustr::count(s, old);
  const int64_t k = count < 0 ? hits : std::min(count, hits);
  GLIA_TRY(in.charge_bytes(s.size() + size_t(k) * repl.size()));
  return value::string(ustr::replace(s, old, repl, count));
}

// Python's int(str, base): optional sign, digits with single underscores, surrounding whitespace.
std::optional<int64_t> parse_int(const std::string& text, int base) {
  std::string t = ustr::strip(text, nullptr, true, true), digits;
  size_t i = 0;
  bool neg = false;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
  for (; i < t.size(); ++i) {
    if (t[i] == '_' && !digits.empty() && i + 1 < t.size() && t[i + 1] != '_') continue;
    digits += t[i];
  }
  if (digits.empty()) return std::nullopt;
  auto prefixed = [&](char p, int b) {
    if ((base == 0 || base == b) && digits.size() > 2 && digits[0] == '0' && (digits[1] | 0x20) == p) {
      digits.erase(0, 2);
      base = b;
      return true;
    }
    return false;
  };
  if (!prefixed('x', 16) && !prefixed('o', 8) && !prefixed('b', 2) && base == 0) {
    // Base 0 is Python's literal syntax: no leading zeros on a non-zero decimal.
    if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos) return std::nullopt;
    base = 10;
  }
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (*end || errno || digits[0] == '+' || digits[0] == '-' || digits[0] == ' ') return std::nullopt;
  return neg ? -v : v;
}

// Python's float(str): decimal or scientific, inf/nan, with surrounding whitespace.
std::optional<double> parse_float(const std::string& text) {
  std::string t = ustr::strip(text, nullptr, true, true), clean;
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i] != '_' || (i > 0 && i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i - 1])) &&
                        std::isdigit(static_cast<unsigned char>(t[i + 1]))))
      clean += t[i];
  if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(clean.c_str(), &end);
  if (*end) return std::nullopt;
  return d;
}

result<value> f_int(interpreter&, const value& v, call_args& a) {
  arg_reader r("int", a, {"default", "base"});
  GLIA_TRY(r.check());
  const value dflt = r.get(0) ? *r.get(0) : value::integer(0);
  // int(Undefined) raises UndefinedError, which do_int does not catch.
  if (v.is_undefined()) return undefined_error(v);
  int base = 10;
  if (const value* b = r.get(1)) base = int(b->is_int() ? b->as_int() : 10);
  if (base != 0 && (base < 2 || base > 36)) base = 10;
  if (v.is_int()) return v;
  if (v.is_bool()) return value::integer(v.int_like());
  if (v.is_float()) {
    if (std::isnan(v.as_float())) return dflt;
    if (std::isinf(v.as_float()) || std::fabs(v.as_float()) >= 9.2e18)
      return make_error("OverflowError: cannot convert float infinity or huge float to a 64-bit integer");
    return value::integer(int64_t(std::trunc(v.as_float())));
  }
  if (v.is_string()) {
    if (auto i = parse_int(v.str(), base)) return value::integer(*i);
    if (auto d = parse_float(v.str()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
      return value::integer(int64_t(std::trunc(*d)));
  }
  return dflt;
}

result<value> f_float(interpreter&, const value& v, call_args& a) {
  arg_reader r("float", a, {"default"});
  GLIA_TRY(r.check());
  const value dflt = r.get(0) ? *r.get(0) : value::floating(0.0);
  if (v.is_undefined()) return undefined_error(v);  // float(Undefined) raises, as int() does
  if (v.is_number()) return value::floating(v.number());
  if (v.is_string())
    if (auto d = parse_float(v.str())) return value::floating(*d);
  return dflt;
}

result<value> f_abs(interpreter&, const value& v, call_args& a) {
  arg_reader r("abs", a, {});
  GLIA_TRY(r.check());
  // abs(Undefined): Undefined has no __abs__, so this is a TypeError rather than UndefinedError.
  if (v.is_undefined()) return make_error("TypeError: bad operand type for abs(): 'Undefined'");
  if (v.is_float()) return value::floating(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.int_like() == INT64_MIN) return make_error("OverflowError: integer result does not fit in 64 bits");
    return value::integer(std::llabs(v.int_like()));
  }
  if (v.is_undefined()) return undefined_error(v);
  return make_error("TypeError: bad operand type for abs(): '{}'", type_name(v));
}

// Python's round(x, n): the decimal rounding of the exact binary value, ties to even.
double py_round(double x, int64_t n) {
  if (!std::isfinite(x)) return x;
  if (n >= 0) {
    if (n > 300) return x;
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", int(n), x);
    return std::strtod(buf, nullptr);
  }
  const double p = std::pow(10.0, double(-n));
  return std::nearbyint(x / p) * p;
}

result<value> f_round(interpreter&, const value& v, call_args& a) {
  arg_reader r("round", a, {"precision", "method"});
  GLIA_TRY(r.check());
  if (v.is_undefined()) return make_error("TypeError: type Undefined doesn't define __round__ method");
  int64_t precision = 0;
  if (const value* p = r.get(0)) {
    if (!p->is_int() && !p->is_bool()) return make_error("TypeError: round() precision must be an integer");
    precision = p->int_like();
  }
  const std::string method = r.get(1) ? to_str(*r.get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    return make_error("FilterArgumentError: method must be common, ceil or floor");
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_number()) return make_error("TypeError: type {} doesn't define __round__ method", type_name(v));
  if (method == "common") {
    if (!v.is_float() && precision >= 0) return value::integer(v.int_like());
    const double rounded = py_round(v.number(), precision);
    if (!v.is_float()) return value::integer(int64_t(rounded));
    return value::floating(rounded);
  }
  const double scale = std::pow(10.0, double(precision));
  const double x = v.number() * scale;
  return value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

result<value> f_indent(interpreter& in, const value& v, call_args& a) {
  arg_reader r("indent", a, {"width", "first", "blank"});
  GLIA_TRY(r.check());
  std::string ind(4, ' ');
  if (const value* w = r.get(0)) {
    if (w->is_string()) ind = w->str();
    else if (w->is_int() || w->is_bool()) ind = std::string(size_t(std::clamp<int64_t>(w->int_like(), 0, 4096)), ' ');
    else return make_error("TypeError: indent width must be an integer or a string");
  }
  const bool first = r.get(1) && truthy(*r.get(1));
  const bool blank = r.get(2) && truthy(*r.get(2));
  // do_indent starts with `s += "\n"`, which only strings (and lists) accept.
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_array() && v.arr().kind == seq_kind::tuple)
    return make_error("TypeError: can only concatenate tuple (not \"str\") to tuple");
  if (v.is_array() && v.arr().kind == seq_kind::list)  // list += "\n" extends it; then s.splitlines() fails
    return make_error("AttributeError: 'list' object has no attribute 'splitlines'");
  if (!v.is_string())
    return make_error("TypeError: unsupported operand type(s) for +=: '{}' and 'str'", type_name(v));
  const std::vector<std::string> lines = ustr::splitlines(to_str(v) + "\n", false);
  GLIA_TRY(in.charge_bytes(to_str(v).size() + lines.size() * ind.size()));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i && (blank || !lines[i].empty())) out += ind;
    out += lines[i];
  }
  if (first) out = ind + out;
  return value::string(std::move(out));
}

result<value> f_escape(interpreter&, const value& v, call_args& a) {
  arg_reader r("escape", a, {});
  GLIA_TRY(r.check());
  return value::string(html_escape(to_str(v)));
}

result<value> f_safe(interpreter&, const value& v, call_args& a) {
  arg_reader r("safe", a, {});
  GLIA_TRY(r.check());
  return v.is_string() ? v : value::string(to_str(v));
}

result<value> f_string(interpreter&, const value& v, call_args& a) {
  arg_reader r("string", a, {});
  GLIA_TRY(r.check());
  return v.is_string() ? v : value::string(to_str(v));
}

result<value> f_wordcount(interpreter&, const value& v, call_args& a) {
  arg_reader r("wordcount", a, {});
  GLIA_TRY(r.check());
  const std::string s = to_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const uint32_t cp = ustr::decode(s, i, len);
    const bool w = ustr::is_alpha(cp) || ustr::is_digit(cp) || cp == '_';
    if (w && !in_word) ++n;
    in_word = w;
    i += len;
  }
  return value::integer(n);
}

result<value> f_center(interpreter& in, const value& v, call_args& a) {
  arg_reader r("center", a, {"width"});
  GLIA_TRY(r.check());
  call_args inner;
  inner.pos.push_back(r.get(0) ? *r.get(0) : value::integer(80));
  return get_attr(value::string(to_str(v)), "center").value().fn().fn(in, inner);
}

result<value> f_truncate(interpreter&, const value& v, call_args& a) {
  arg_reader r("truncate", a, {"length", "killwords", "end", "leeway"});
  GLIA_TRY(r.check());
  const std::string s = to_str(v);
  const int64_t length = r.get(0) ? r.get(0)->int_like() : 255;
  const bool killwords = r.get(1) && truthy(*r.get(1));
  const std::string end = r.get(2) ? to_str(*r.get(2)) : "...";
  const int64_t leeway = r.get(3) && !r.get(3)->is_none() ? r.get(3)->int_like() : 5;
  const int64_t end_len = int64_t(ustr::length(end));
  if (length < end_len) return make_error("AssertionError: expected length >= {}, got {}", end_len, length);
  const std::vector<size_t> b = ustr::boundaries(s);
  const int64_t n = int64_t(b.size()) - 1;
  if (n <= length + leeway) return value::string(s);
  std::string head = s.substr(0, b[size_t(length - end_len)]);
  if (!killwords) {
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return value::string(head + end);
}

result<value> f_format(interpreter& in, const value& v, call_args& a) {
  if (!a.pos.empty() && !a.kw.empty())
    return make_error("FilterArgumentError: can't handle positional and keyword arguments at the same time");
  value args;
  if (!a.kw.empty()) {
    object_data o;
    for (auto& [k, x] : a.kw) o.set(value::string(k), x);
    args = value::object(std::move(o));
  } else {
    args = value::array(a.pos, seq_kind::tuple);
  }
  GLIA_ASSIGN(std::string s, percent_format(to_str(v), args));
  GLIA_TRY(in.charge_bytes(s.size()));
  return value::string(std::move(s));
}

result<value> f_striptags(interpreter&, const value& v, call_args& a) {
  arg_reader r("striptags", a, {});
  GLIA_TRY(r.check());
  const std::string s = to_str(v);
  std::string text;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "<!--") == 0) {
      const size_t e = s.find("-->", i + 4);
      if (e != std::string::npos) {
        i = e + 3;
        continue;
      }
    }
    if (s[i] == '<') {
      const size_t e = s.find('>', i + 1);
      if (e != std::string::npos) {
        i = e + 1;
        continue;
      }
    }
    text += s[i++];
  }
  std::string collapsed;
  for (const auto& w : ustr::split(text, nullptr, -1)) collapsed += (collapsed.empty() ? "" : " ") + w;
  static const std::pair<std::string_view, std::string_view> entities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#34;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities) collapsed = ustr::replace(collapsed, from, to, -1);
  return value::string(std::move(collapsed));
}

result<value> f_pprint(interpreter&, const value& v, call_args& a) {
  arg_reader r("pprint", a, {});
  GLIA_TRY(r.check());
  return value::string(repr(v));
}

}  // namespace

const std::map<std::string, filter_fn, std::less<>>& text_filters() {
  static const std::map<std::string, filter_fn, std::less<>> table = {
      {"upper", [](interpreter&, const value& v, call_args& a) { return text_only(v, a, "upper", ustr::upper); }},
      {"lower", [](interpreter&, const value& v, call_args& a) { return text_only(v, a, "lower", ustr::lower); }},
      {"capitalize", [](interpreter&, const value& v, call_args& a) { return text_only(v, a, "capitalize", ustr::capitalize); }},
      {"title", [](interpreter&, const value& v, call_args& a) { return text_only(v, a, "title", jinja_title); }},
      {"trim", f_trim},
      {"replace", f_replace},
      {"int", f_int},
      {"float", f_float},
      {"abs", f_abs},
      {"round", f_round},
      {"indent", f_indent},
      {"escape", f_escape},
      {"e", f_escape},
      {"forceescape", f_escape},
      {"safe", f_safe},
      {"string", f_string},
      {"wordcount", f_wordcount},
      {"center", f_center},
      {"truncate", f_truncate},
      {"format", f_format},
      {"striptags", f_striptags},
      {"pprint", f_pprint},
  };
  return table;
}

}  // namespace glia::jinja
