#include "tokenizer/jinja/json_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {

result<value> from_json(const json& j, uint32_t max_depth) {
  switch (j.type()) {
    case json::value_t::null: return value::none();
    case json::value_t::boolean: return value::boolean(j.get<bool>());
    case json::value_t::number_integer: return value::integer(j.get<int64_t>());
    case json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > uint64_t(std::numeric_limits<int64_t>::max())) return value::floating(double(u));
      return value::integer(int64_t(u));
    }
    case json::value_t::number_float: return value::floating(j.get<double>());
    case json::value_t::string: return value::string(j.get<std::string>());
    case json::value_t::array: {
      if (max_depth == 0) return make_error("JSON input nests deeper than the template limit");
      std::vector<value> items;
      items.reserve(j.size());
      for (const auto& e : j) {
        auto v = from_json(e, max_depth - 1);
        if (!v) return v.take_error();
        items.push_back(std::move(*v));
      }
      return value::array(std::move(items));
    }
    case json::value_t::object: {
      if (max_depth == 0) return make_error("JSON input nests deeper than the template limit");
      object_data o;
      for (const auto& [k, e] : j.items()) {
        auto v = from_json(e, max_depth - 1);
        if (!v) return v.take_error();
        o.set(value::string(k), std::move(*v));
      }
      return value::object(std::move(o));
    }
    default: return make_error("JSON input holds a value of type {} that templates cannot use", j.type_name());
  }
}

namespace {

struct dumper {
  const dumps_options& opt;
  size_t max_bytes;
  std::string out;

  std::string_view item_separator() const {
    if (opt.item_separator) return *opt.item_separator;
    return opt.indent ? "," : ", ";
  }

  status check() const {
    if (out.size() > max_bytes) return make_error("OutputLimit: tojson output exceeds {} bytes", max_bytes);
    return {};
  }

  void string(std::string_view s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
      size_t len;
      const uint32_t cp = ustr::decode(s, i, len);
      switch (cp) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (cp < 0x20 || (opt.ensure_ascii && cp >= 0x7F)) {
            if (cp >= 0x10000) {
              const uint32_t c = cp - 0x10000;
              out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF));
            } else {
              out += fmt::format("\\u{:04x}", cp);
            }
          } else {
            out.append(s.substr(i, len));
          }
      }
      i += len;
    }
    out += '"';
  }

  static std::string number(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return float_repr(d);
  }

  // json.dumps turns keys of these types into strings; others are a TypeError.
  static result<std::string> key_text(const value& k) {
    switch (k.type()) {
      case kind::string: return k.str();
      case kind::integer: return std::to_string(k.as_int());
      case kind::floating: return number(k.as_float());
      case kind::boolean: return std::string(k.as_bool() ? "true" : "false");
      case kind::none: return std::string("null");
      default: return make_error("TypeError: keys must be str, int, float, bool or None, not {}", type_name(k));
    }
  }

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *opt.indent;
  }

  status dump(const value& v, int level) {
    switch (v.type()) {
      case kind::none: out += "null"; return {};
      case kind::boolean: out += v.as_bool() ? "true" : "false"; return {};
      case kind::integer: out += std::to_string(v.as_int()); return {};
      case kind::floating: out += number(v.as_float()); return {};
      case kind::string: string(v.str()); return check();
      case kind::array: {
        if (v.arr().kind == seq_kind::generator) break;
        const auto& items = v.arr().items;
        if (items.empty()) {
          out += "[]";
          return {};
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_separator();
          if (opt.indent) newline(level + 1);
          GLIA_TRY(dump(items[i], level + 1));
        }
        if (opt.indent) newline(level);
        out += ']';
        return check();
      }
      case kind::object: return dump_object(v.obj(), level);
      default: break;
    }
    return make_error("TypeError: Object of type {} is not JSON serializable", type_name(v));
  }

  status dump_object(const object_data& o, int level) {
    if (o.size() == 0) {
      out += "{}";
      return {};
    }
    std::vector<const std::pair<value, value>*> order;
    for (const auto& e : o.entries) order.push_back(&e);
    if (opt.sort_keys) {
      const bool all_str = std::all_of(order.begin(), order.end(), [](auto* e) { return e->first.is_string(); });
      const bool all_num = std::all_of(order.begin(), order.end(), [](auto* e) { return e->first.is_number(); });
      if (!all_str && !all_num)
        for (const auto* e : order)
          if (e->first.type() != order.front()->first.type())
            return make_error("TypeError: '<' not supported between instances of '{}' and '{}'",
                              type_name(e->first), type_name(order.front()->first));
      std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
        if (a->first.is_string()) return a->first.str() < b->first.str();
        return a->first.number() < b->first.number();
      });
    }
    out += '{';
    bool first = true;
    for (const auto* e : order) {
      auto key = key_text(e->first);
      if (!key) return key.take_error();
      if (!first) out += item_separator();
      first = false;
      if (opt.indent) newline(level + 1);
      string(*key);
      out += opt.key_separator;
      GLIA_TRY(dump(e->second, level + 1));
    }
    if (opt.indent) newline(level);
    out += '}';
    return check();
  }
};

}  // namespace

result<std::string> dumps(const value& v, const dumps_options& opt, size_t max_bytes) {
  dumper d{opt, max_bytes, {}};
  GLIA_TRY(d.dump(v, 0));
  return std::move(d.out);
}

}  // namespace glia::jinja
