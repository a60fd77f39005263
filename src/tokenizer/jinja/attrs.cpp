// Attribute and item access with the rules of Jinja2's ImmutableSandboxedEnvironment, and the
// Python methods templates call on str, dict and list values.
#include <algorithm>
#include <map>
#include <optional>

#include "tokenizer/jinja/interp.h"
#include "core/status.h"
#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {
namespace {

// Jinja's object_type_repr: how error messages name the type of an object.
std::string object_type(const value& v) {
  if (v.is_none()) return "None";
  if (v.is_namespace()) return "jinja2.utils.Namespace object";
  if (v.is_undefined()) return "jinja2.runtime.Undefined object";
  return type_name(v) + " object";
}

value no_attribute(const value& obj, const std::string& name) {
  return value::undefined(fmt::format("'{}' has no attribute '{}'", object_type(obj), name));
}

value no_element(const value& obj, const value& key) {
  return value::undefined(fmt::format("{} has no element {}", object_type(obj), repr(key)));
}

constexpr std::string_view str_methods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
    "title", "capitalize", "swapcase", "replace", "format", "join", "count", "find", "rfind", "index", "rindex",
    "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum", "isspace", "islower", "isupper", "istitle", "center", "ljust",
    "rjust", "zfill", "partition", "rpartition", "removeprefix", "removesuffix", "casefold"};
constexpr std::string_view dict_methods[] = {"items", "keys", "values", "get", "copy"};
constexpr std::string_view list_methods[] = {"index", "count", "copy"};
// Methods that mutate: the immutable sandbox refuses them.
constexpr std::string_view dict_unsafe[] = {"pop", "popitem", "setdefault", "update", "clear"};
constexpr std::string_view list_unsafe[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
bool in(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

const std::string* opt_str(const value* v) { return v && v->is_string() ? &v->str() : nullptr; }

result<int64_t> int_arg(const value* v, int64_t dflt, std::string_view what) {
  if (!v || v->is_none()) return dflt;
  if (v->is_int() || v->is_bool()) return v->int_like();
  return make_error("TypeError: {} must be an integer, not {}", what, type_name(*v));
}

value str_list(std::vector<std::string> parts) {
  std::vector<value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(value::string(std::move(p)));
  return value::array(std::move(items));
}

// The part of `s` between character indexes start and end (Python's optional start/end arguments).
result<std::string> sub_range(const std::string& s, const value* start, const value* end) {
  if ((!start || start->is_none()) && (!end || end->is_none())) return s;
  GLIA_ASSIGN(int64_t b, int_arg(start, 0, "slice index"));
  const std::vector<size_t> bounds = ustr::boundaries(s);
  const int64_t len = int64_t(bounds.size()) - 1;
  GLIA_ASSIGN(int64_t e, int_arg(end, len, "slice index"));
  auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + len : i, int64_t(0), len); };
  b = clamp(b), e = clamp(e);
  if (e <= b) return std::string();
  return s.substr(bounds[size_t(b)], bounds[size_t(e)] - bounds[size_t(b)]);
}

result<value> affix_test(const std::string& self, const std::string& method, arg_reader& r) {
  const value* arg = r.get(0);
  if (!arg) return make_error("TypeError: {}() takes at least 1 argument (0 given)", method);
  GLIA_ASSIGN(std::string s, sub_range(self, r.get(1), r.get(2)));
  std::vector<const std::string*> options;
  if (arg->is_string()) {
    options.push_back(&arg->str());
  } else if (arg->is_array() && arg->arr().kind == seq_kind::tuple) {
    for (const value& x : arg->arr().items) {
      if (!x.is_string())
        return make_error("TypeError: tuple for {} must only contain str, not {}", method, type_name(x));
      options.push_back(&x.str());
    }
  } else {
    return make_error("TypeError: {} first arg must be str or a tuple of str, not {}", method, type_name(*arg));
  }
  for (const std::string* o : options)
    if (method == "startswith" ? s.starts_with(*o) : s.ends_with(*o)) return value::boolean(true);
  return value::boolean(false);
}

result<value> pad(interpreter& in, const std::string& self, const std::string& method, arg_reader& r) {
  GLIA_ASSIGN(int64_t width, int_arg(r.get(0), 0, "width"));
  std::string fill = " ";
  if (const value* f = r.get(1)) {
    if (!f->is_string() || ustr::length(f->str()) != 1)
      return make_error("TypeError: The fill character must be exactly one character long");
    fill = f->str();
  }
  const int64_t len = int64_t(ustr::length(self));
  if (width <= len) return value::string(self);
  GLIA_TRY(in.charge_bytes(self.size() + size_t(width - len) * fill.size()));
  const int64_t total = width - len;
  int64_t left = 0;
  if (method == "rjust") left = total;
  else if (method == "center") left = total / 2 + (total & width & 1);  // CPython's centering rule
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += self;
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return value::string(std::move(out));
}

template <typename Pred>
value all_chars(const std::string& s, Pred p) {
  if (s.empty()) return value::boolean(false);
  for (size_t i = 0; i < s.size();) {
    size_t len;
    if (!p(ustr::decode(s, i, len))) return value::boolean(false);
    i += len;
  }
  return value::boolean(true);
}

result<value> str_method(interpreter& in, const std::string& self, const std::string& m, call_args& a) {
  static const std::map<std::string, std::vector<std::string>> sigs = {
      {"strip", {"chars"}}, {"lstrip", {"chars"}}, {"rstrip", {"chars"}}, {"split", {"sep", "maxsplit"}},
      {"rsplit", {"sep", "maxsplit"}}, {"splitlines", {"keepends"}}, {"startswith", {"prefix", "start", "end"}},
      {"endswith", {"suffix", "start", "end"}}, {"replace", {"old", "new", "count"}}, {"join", {"iterable"}},
      {"count", {"sub", "start", "end"}}, {"find", {"sub", "start", "end"}}, {"rfind", {"sub", "start", "end"}},
      {"index", {"sub", "start", "end"}}, {"rindex", {"sub", "start", "end"}}, {"center", {"width", "fillchar"}},
      {"ljust", {"width", "fillchar"}}, {"rjust", {"width", "fillchar"}}, {"zfill", {"width"}},
      {"partition", {"sep"}}, {"rpartition", {"sep"}}, {"removeprefix", {"prefix"}}, {"removesuffix", {"suffix"}}};
  if (m == "format") {
    GLIA_ASSIGN(std::string s, brace_format(self, a));
    GLIA_TRY(in.charge_bytes(s.size()));
    return value::string(std::move(s));
  }
  auto sig = sigs.find(m);
  arg_reader r("str." + m, a, sig == sigs.end() ? std::vector<std::string>{} : sig->second);
  GLIA_TRY(r.check());
  GLIA_TRY(in.tick(self.size() / 16));
  if (m == "strip" || m == "lstrip" || m == "rstrip") {
    const value* c = r.get(0);
    if (c && !c->is_none() && !c->is_string())
      return make_error("TypeError: {} arg must be None or str", m);
    return value::string(ustr::strip(self, opt_str(c), m != "rstrip", m != "lstrip"));
  }
  if (m == "split" || m == "rsplit") {
    const value* sep = r.get(0);
    if (sep && !sep->is_none() && !sep->is_string())
      return make_error("TypeError: must be str or None, not {}", type_name(*sep));
    if (sep && sep->is_string() && sep->str().empty()) return make_error("ValueError: empty separator");
    GLIA_ASSIGN(int64_t maxsplit, int_arg(r.get(1), -1, "maxsplit"));
    auto parts = m == "split" ? ustr::split(self, opt_str(sep), maxsplit) : ustr::rsplit(self, opt_str(sep), maxsplit);
    GLIA_TRY(in.tick(parts.size()));
    return str_list(std::move(parts));
  }
  if (m == "splitlines") return str_list(ustr::splitlines(self, r.get(0) && truthy(*r.get(0))));
  if (m == "startswith" || m == "endswith") return affix_test(self, m, r);
  if (m == "upper") return value::string(ustr::upper(self));
  if (m == "lower" || m == "casefold") return value::string(ustr::lower(self));
  if (m == "title") return value::string(ustr::title(self));
  if (m == "capitalize") return value::string(ustr::capitalize(self));
  if (m == "swapcase") {
    std::string out;
    for (size_t i = 0; i < self.size();) {
      size_t len;
      const uint32_t cp = ustr::decode(self, i, len);
      // Python: upper -> lower, lower -> upper, anything else (titlecase letters too) as it is.
      ustr::append(out, ustr::is_cased_upper(cp) ? ustr::to_lower(cp) : ustr::is_cased_lower(cp) ? ustr::to_upper(cp) : cp);
      i += len;
    }
    return value::string(std::move(out));
  }
  if (m == "replace") {
    const value *o = r.get(0), *n = r.get(1);
    if (!o || !n || !o->is_string() || !n->is_string()) return make_error("TypeError: replace() arguments must be str");
    GLIA_ASSIGN(int64_t count, int_arg(r.get(2), -1, "count"));
    const int64_t hits = o->str().empty() ? int64_t(ustr::length(self)) + 1 : ustr::count(self, o->str());
    const int64_t k = count < 0 ? hits : std::min(count, hits);
    GLIA_TRY(in.charge_bytes(self.size() + size_t(k) * n->str().size()));
    return value::string(ustr::replace(self, o->str(), n->str(), count));
  }
  if (m == "join") {
    if (!r.get(0)) return make_error("TypeError: join() takes exactly one argument (0 given)");
    GLIA_ASSIGN(std::vector<value> items, iterate(*r.get(0)));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        return make_error("TypeError: sequence item {}: expected str instance, {} found", i, type_name(items[i]));
      const size_t before = out.size();
      if (i) out += self;
      out += items[i].str();
      GLIA_TRY(in.charge_bytes(out.size(), out.size() - before));
    }
    return value::string(std::move(out));
  }
  if (m == "count" || m == "find" || m == "rfind" || m == "index" || m == "rindex") {
    const value* sub = r.get(0);
    if (!sub || !sub->is_string()) return make_error("TypeError: must be str, not {}", sub ? type_name(*sub) : "nothing");
    GLIA_ASSIGN(std::string hay, sub_range(self, r.get(1), r.get(2)));
    if (m == "count") return value::integer(ustr::count(hay, sub->str()));
    int64_t at = ustr::find(hay, sub->str(), m == "rfind" || m == "rindex");
    if (at >= 0 && r.get(1) && !r.get(1)->is_none()) {
      // Offsets are relative to the whole string.
      const int64_t len = int64_t(ustr::length(self));
      int64_t b = r.get(1)->int_like();
      b = std::clamp(b < 0 ? b + len : b, int64_t(0), len);
      at += b;
    }
    if (at < 0 && (m == "index" || m == "rindex")) return make_error("ValueError: substring not found");
    return value::integer(at);
  }
  if (m == "isdigit" || m == "isdecimal") return all_chars(self, ustr::is_digit);
  if (m == "isnumeric") return all_chars(self, ustr::is_numeric);
  if (m == "isalpha") return all_chars(self, ustr::is_alpha);
  if (m == "isalnum") return all_chars(self, [](uint32_t c) { return ustr::is_alpha(c) || ustr::is_digit(c); });
  if (m == "isspace") return all_chars(self, ustr::is_space);
  if (m == "istitle") {
    // Uppercase/titlecase letters only after uncased characters, lowercase ones only after cased.
    bool prev_cased = false, any = false;
    for (size_t i = 0; i < self.size();) {
      size_t len;
      const uint32_t cp = ustr::decode(self, i, len);
      i += len;
      if (ustr::is_cased_upper(cp) || ustr::is_titlecase(cp)) {
        if (prev_cased) return value::boolean(false);
        prev_cased = any = true;
      } else if (ustr::is_cased_lower(cp)) {
        if (!prev_cased) return value::boolean(false);
        prev_cased = true;
      } else {
        prev_cased = false;
      }
    }
    return value::boolean(any);
  }
  if (m == "islower" || m == "isupper") {
    bool cased = false;
    for (size_t i = 0; i < self.size();) {
      size_t len;
      const uint32_t cp = ustr::decode(self, i, len);
      i += len;
      if (ustr::is_cased_upper(cp)) {
        if (m == "islower") return value::boolean(false);
        cased = true;
      } else if (ustr::is_cased_lower(cp)) {
        if (m == "isupper") return value::boolean(false);
        cased = true;
      }
    }
    return value::boolean(cased);
  }
  if (m == "center" || m == "ljust" || m == "rjust") return pad(in, self, m, r);
  if (m == "zfill") {
    GLIA_ASSIGN(int64_t width, int_arg(r.get(0), 0, "width"));
    const int64_t len = int64_t(ustr::length(self));
    if (width <= len) return value::string(self);
    GLIA_TRY(in.charge_bytes(size_t(width)));
    const bool sign = !self.empty() && (self[0] == '+' || self[0] == '-');
    std::string out = sign ? self.substr(0, 1) : "";
    out += std::string(size_t(width - len), '0');
    out += sign ? self.substr(1) : self;
    return value::string(std::move(out));
  }
  if (m == "partition" || m == "rpartition") {
    const value* sep = r.get(0);
    if (!sep || !sep->is_string()) return make_error("TypeError: must be str");
    if (sep->str().empty()) return make_error("ValueError: empty separator");
    const size_t at = m == "partition" ? self.find(sep->str()) : self.rfind(sep->str());
    std::vector<std::string> parts;
    if (at == std::string::npos)
      parts = m == "partition" ? std::vector<std::string>{self, "", ""} : std::vector<std::string>{"", "", self};
    else
      parts = {self.substr(0, at), sep->str(), self.substr(at + sep->str().size())};
    value l = str_list(std::move(parts));
    return value::array(l.arr().items, seq_kind::tuple);
  }
  if (m == "removeprefix" || m == "removesuffix") {
    const value* x = r.get(0);
    if (!x || !x->is_string()) return make_error("TypeError: {}() argument must be str", m);
    if (m == "removeprefix" && self.starts_with(x->str())) return value::string(self.substr(x->str().size()));
    if (m == "removesuffix" && self.ends_with(x->str()) && !x->str().empty())
      return value::string(self.substr(0, self.size() - x->str().size()));
    return value::string(self);
  }
  return make_error("unsupported: str.{}()", m);
}

result<value> dict_method(interpreter& in, const value& self, const std::string& m, call_args& a) {
  const object_data& o = self.obj();
  arg_reader r("dict." + m, a, m == "get" ? std::vector<std::string>{"key", "default"} : std::vector<std::string>{});
  GLIA_TRY(r.check());
  GLIA_TRY(in.tick(o.size()));
  if (m == "get") {
    const value* key = r.get(0);
    if (!key) return make_error("TypeError: get expected at least 1 argument, got 0");
    if (!hashable(*key)) return make_error("TypeError: unhashable type: '{}'", type_name(*key));
    if (const value* v = o.find(*key)) return *v;
    return r.get(1) ? *r.get(1) : value::none();
  }
  if (m == "copy") return self;  // values are immutable, so a copy is the same value
  std::vector<value> items;
  items.reserve(o.size());
  for (const auto& [k, v] : o.entries) {
    if (m == "items") items.push_back(value::array({k, v}, seq_kind::tuple));
    else items.push_back(m == "keys" ? k : v);
  }
  return value::view(std::move(items), m == "items" ? "dict_items" : m == "keys" ? "dict_keys" : "dict_values");
}

result<value> list_method(interpreter& in, const value& self, const std::string& m, call_args& a) {
  const auto& items = self.arr().items;
  arg_reader r(type_name(self) + "." + m, a, m == "copy" ? std::vector<std::string>{} : std::vector<std::string>{"value"});
  GLIA_TRY(r.check());
  GLIA_TRY(in.tick(items.size()));
  if (m == "copy") return value::array(items);
  const value* x = r.get(0);
  if (!x) return make_error("TypeError: {}() takes exactly one argument (0 given)", m);
  if (m == "count") return value::integer(std::count_if(items.begin(), items.end(), [&](const value& v) { return equals(v, *x); }));
  for (size_t i = 0; i < items.size(); ++i)
    if (equals(items[i], *x)) return value::integer(int64_t(i));
  return make_error("ValueError: {} is not in {}", repr(*x), type_name(self));
}

value bound_method(const value& self, const std::string& name) {
  return value::callable(type_name(self) + "." + name, [self, name](interpreter& in, call_args& a) -> result<value> {
    if (self.is_string()) return str_method(in, self.str(), name, a);
    if (self.is_object()) return dict_method(in, self, name, a);
    return list_method(in, self, name, a);
  });
}

// Python attribute lookup on our types; nullopt when the type has no such attribute.
std::optional<value> python_attr(const value& obj, const std::string& name) {
  switch (obj.type()) {
    case kind::string:
      if (in(str_methods, name)) return bound_method(obj, name);
      break;
    case kind::object:
      if (in(dict_methods, name)) return bound_method(obj, name);
      if (in(dict_unsafe, name))
        return value::undefined(fmt::format("access to attribute '{}' of 'dict' object is unsafe.", name), true);
      break;
    case kind::array:
      if (obj.arr().kind == seq_kind::list || obj.arr().kind == seq_kind::tuple) {
        if (in(list_methods, name) && (name != "copy" || obj.arr().kind == seq_kind::list))
          return bound_method(obj, name);
        if (obj.arr().kind == seq_kind::list && in(list_unsafe, name))
          return value::undefined(fmt::format("access to attribute '{}' of 'list' object is unsafe.", name), true);
      }
      break;
    case kind::names:
      if (const value* v = obj.ns().attrs.find(std::string_view(name))) return *v;
      break;
    default: break;
  }
  return std::nullopt;
}

}  // namespace

result<value> get_python_attr(const value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (auto v = python_attr(obj, name)) return *v;
  return no_attribute(obj, name);
}

result<value> get_attr(const value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (auto v = python_attr(obj, name)) return *v;
  if (obj.is_object())
    if (const value* v = obj.obj().find(std::string_view(name))) return *v;
  return no_attribute(obj, name);
}

result<value> get_item(const value& obj, const value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  switch (obj.type()) {
    case kind::object:
      if (hashable(key))
        if (const value* v = obj.obj().find(key)) return *v;
      break;
    case kind::array:
      if ((key.is_int() || key.is_bool()) && obj.arr().kind != seq_kind::generator && obj.arr().kind != seq_kind::view) {
        const auto& items = obj.arr().items;
        int64_t i = key.int_like();
        if (i < 0) i += int64_t(items.size());
        if (i >= 0 && i < int64_t(items.size())) return items[size_t(i)];
        return no_element(obj, key);
      }
      break;
    case kind::string:
      if (key.is_int() || key.is_bool()) {
        const std::vector<size_t> b = ustr::boundaries(obj.str());
        const int64_t len = int64_t(b.size()) - 1;
        int64_t i = key.int_like();
        if (i < 0) i += len;
        if (i >= 0 && i < len) return value::string(obj.str().substr(b[size_t(i)], b[size_t(i) + 1] - b[size_t(i)]));
        return no_element(obj, key);
      }
      break;
    default: break;
  }
  if (key.is_string()) {
    if (auto v = python_attr(obj, key.str())) return *v;
    return no_attribute(obj, key.str());
  }
  return no_element(obj, key);
}

}  // namespace glia::jinja
