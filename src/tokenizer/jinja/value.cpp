#include "tokenizer/jinja/value.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {

value value::undefined(std::string message, bool security) {
  return value(std::make_shared<const undefined_info>(undefined_info{std::move(message), security}));
}

value value::array(std::vector<value> items, seq_kind k) {
  auto a = std::make_shared<array_data>();
  uint32_t d = 0;
  for (const value& v : items) d = std::max(d, v.depth());
  a->items = std::move(items);
  a->kind = k;
  a->depth = d + 1;
  return value(array_ptr(std::move(a)));
}

value value::view(std::vector<value> items, std::string_view view_name) {
  value v = array(std::move(items), seq_kind::view);
  const_cast<array_data&>(v.arr()).view_name = view_name;  // freshly made, not shared yet
  return v;
}

value value::object(object_data o) {
  uint32_t d = 0;
  for (const auto& [k, v] : o.entries) d = std::max({d, k.depth(), v.depth()});
  o.depth = d + 1;
  return value(object_ptr(std::make_shared<const object_data>(std::move(o))));
}

value value::callable(std::string name, std::function<result<value>(interpreter&, call_args&)> fn) {
  return value(callable_ptr(std::make_shared<const callable_data>(callable_data{std::move(name), std::move(fn)})));
}

const void* value::identity() const {
  switch (type()) {
    case kind::string: return std::get<str_ptr>(v_).get();
    case kind::array: return std::get<array_ptr>(v_).get();
    case kind::object: return std::get<object_ptr>(v_).get();
    case kind::callable: return std::get<callable_ptr>(v_).get();
    case kind::names: return std::get<namespace_ptr>(v_).get();
    default: return nullptr;
  }
}

uint32_t value::depth() const {
  switch (type()) {
    case kind::array: return arr().depth;
    case kind::object: return obj().depth;
    case kind::names: return ns().attrs.depth;
    default: return 0;
  }
}

const value* object_data::find(std::string_view key) const {
  if (index.empty()) {  // small dicts are scanned
    for (const auto& [k, v] : entries)
      if (k.is_string() && k.str() == key) return &v;
    return nullptr;
  }
  auto it = index.find(std::string(key));
  return it == index.end() ? nullptr : &entries[it->second].second;
}

const value* object_data::find(const value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& [k, v] : entries)
    if (!k.is_string() && equals(k, key)) return &v;
  return nullptr;
}

void object_data::set(value key, value v) {
  depth = std::max({depth, key.depth() + 1, v.depth() + 1});
  if (key.is_string()) {
    if (index.empty() && entries.size() < small_size) {
      for (auto& [k, old] : entries)
        if (k.is_string() && k.str() == key.str()) {
          old = std::move(v);
          return;
        }
      entries.emplace_back(std::move(key), std::move(v));
      return;
    }
    if (index.empty())
      for (size_t i = 0; i < entries.size(); ++i)
        if (entries[i].first.is_string()) index.emplace(entries[i].first.str(), i);
    auto [it, inserted] = index.emplace(key.str(), entries.size());
    if (inserted) entries.emplace_back(std::move(key), std::move(v));
    else entries[it->second].second = std::move(v);
    return;
  }
  for (auto& [k, old] : entries)
    if (!k.is_string() && equals(k, key)) {
      old = std::move(v);
      return;
    }
  entries.emplace_back(std::move(key), std::move(v));
}

std::string type_name(const value& v) {
  switch (v.type()) {
    case kind::undefined: return "Undefined";
    case kind::none: return "NoneType";
    case kind::boolean: return "bool";
    case kind::integer: return "int";
    case kind::floating: return "float";
    case kind::string: return "str";
    case kind::array:
      switch (v.arr().kind) {
        case seq_kind::list: return "list";
        case seq_kind::tuple: return "tuple";
        case seq_kind::generator: return "generator";
        case seq_kind::view: return std::string(v.arr().view_name);
      }
      return "list";
    case kind::object: return "dict";
    case kind::callable: return "function";
    case kind::names: return "Namespace";
  }
  return "object";
}

bool truthy(const value& v) {
  switch (v.type()) {
    case kind::undefined:
    case kind::none: return false;
    case kind::boolean: return v.as_bool();
    case kind::integer: return v.as_int() != 0;
    case kind::floating: return v.as_float() != 0.0;
    case kind::string: return !v.str().empty();
    case kind::array: return v.arr().kind == seq_kind::generator || !v.arr().items.empty();
    case kind::object: return v.obj().size() > 0;
    case kind::callable:
    case kind::names: return true;
  }
  return false;
}

bool equals(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.number() == b.number();
    return a.int_like() == b.int_like();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case kind::undefined:
    case kind::none: return true;
    case kind::string: return a.str() == b.str();
    case kind::array: {
      const array_data &x = a.arr(), &y = b.arr();
      if (x.kind == seq_kind::generator || y.kind == seq_kind::generator) return &x == &y;
      if (x.kind != y.kind || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case kind::object: {
      const object_data &x = a.obj(), &y = b.obj();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

bool hashable(const value& v) {
  switch (v.type()) {
    case kind::object:
    case kind::names: return false;
    case kind::array:
      if (v.arr().kind != seq_kind::tuple) return v.arr().kind == seq_kind::generator;
      for (const value& x : v.arr().items)
        if (!hashable(x)) return false;
      return true;
    default: return true;
  }
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: positional when -4 <= exponent < 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') sign = "-", sci.erase(0, 1);
  const size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp) + 1 >= digits.size()) {
      out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  return fmt::format("{}{}e{}{:02d}", sign, mant, exp < 0 ? '-' : '+', std::abs(exp));
}

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const uint32_t cp = ustr::decode(s, i, len);
    if (cp == uint32_t(q) || cp == '\\') {
      out += '\\';
      out += char(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (ustr::is_printable(cp)) {
      out.append(s.substr(i, len));
    } else if (cp < 0x100) {
      out += fmt::format("\\x{:02x}", cp);
    } else if (cp < 0x10000) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out += fmt::format("\\U{:08x}", cp);
    }
    i += len;
  }
  out += q;
  return out;
}

std::string repr(const value& v) {
  switch (v.type()) {
    case kind::undefined: return "Undefined";
    case kind::string: return string_repr(v.str());
    case kind::array: {
      const array_data& a = v.arr();
      if (a.kind == seq_kind::generator) return "<generator object>";
      if (a.kind == seq_kind::view) return fmt::format("{}({})", a.view_name, repr(value::array(a.items)));
      std::string out = a.kind == seq_kind::tuple ? "(" : "[";
      for (size_t i = 0; i < a.items.size(); ++i) {
        if (i) out += ", ";
        out += repr(a.items[i]);
      }
      if (a.kind == seq_kind::tuple && a.items.size() == 1) out += ",";
      out += a.kind == seq_kind::tuple ? ")" : "]";
      return out;
    }
    case kind::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.obj().entries) {
        if (!first) out += ", ";
        first = false;
        out += repr(k) + ": " + repr(x);
      }
      return out + "}";
    }
    case kind::callable: return fmt::format("<function {}>", v.fn().name);
    case kind::names: {
      std::string inner = repr(value::object(v.ns().attrs));
      return "<Namespace " + inner + ">";
    }
    default: return to_str(v);
  }
}

std::string to_str(const value& v) {
  switch (v.type()) {
    case kind::undefined: return "";
    case kind::none: return "None";
    case kind::boolean: return v.as_bool() ? "True" : "False";
    case kind::integer: return std::to_string(v.as_int());
    case kind::floating: return float_repr(v.as_float());
    case kind::string: return v.str();
    default: return repr(v);
  }
}

result<std::vector<value>> iterate(const value& v) {
  switch (v.type()) {
    case kind::undefined: return std::vector<value>{};
    case kind::array: return v.arr().items;
    case kind::object: {
      std::vector<value> keys;
      keys.reserve(v.obj().size());
      for (const auto& [k, x] : v.obj().entries) keys.push_back(k);
      return keys;
    }
    case kind::string: {
      std::vector<value> out;
      for (auto& c : ustr::chars(v.str())) out.push_back(value::string(std::move(c)));
      return out;
    }
    default: return make_error("TypeError: '{}' object is not iterable", type_name(v));
  }
}

result<int64_t> length(const value& v) {
  switch (v.type()) {
    case kind::undefined: return int64_t(0);
    case kind::string: return int64_t(ustr::length(v.str()));
    case kind::array:
      if (v.arr().kind == seq_kind::generator) break;
      return int64_t(v.arr().items.size());
    case kind::object: return int64_t(v.obj().size());
    default: break;
  }
  return make_error("TypeError: object of type '{}' has no len()", type_name(v));
}

}  // namespace glia::jinja
