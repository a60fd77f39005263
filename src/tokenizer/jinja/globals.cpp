// Global functions: Jinja's range (with the sandbox's MAX_RANGE), namespace and dict, and the two
// HF adds for chat templates: raise_exception(msg) and strftime_now(fmt).
#include <ctime>

#include "tokenizer/jinja/interp.h"
#include "core/status.h"

namespace glia::jinja {
namespace {

// Jinja2's sandbox refuses ranges longer than this (jinja2.sandbox.MAX_RANGE).
constexpr int64_t max_range = 100000;

result<value> g_range(interpreter& in, call_args& a) {
  if (!a.kw.empty()) return make_error("TypeError: range() takes no keyword arguments");
  if (a.pos.empty() || a.pos.size() > 3) return make_error("TypeError: range expected 1 to 3 arguments, got {}", a.pos.size());
  int64_t p[3] = {0, 0, 0};
  for (size_t i = 0; i < a.pos.size(); ++i) {
    if (!a.pos[i].is_int() && !a.pos[i].is_bool())
      return make_error("TypeError: '{}' object cannot be interpreted as an integer", type_name(a.pos[i]));
    p[i] = a.pos[i].int_like();
  }
  int64_t start = 0, stop, step = 1;
  if (a.pos.size() == 1) stop = p[0];
  else start = p[0], stop = p[1];
  if (a.pos.size() == 3) step = p[2];
  if (step == 0) return make_error("ValueError: range() arg 3 must not be zero");
  // Length computed without overflow, as CPython does.
  uint64_t n = 0;
  if (step > 0 && start < stop) n = (uint64_t(stop) - uint64_t(start) - 1) / uint64_t(step) + 1;
  if (step < 0 && start > stop) n = (uint64_t(start) - uint64_t(stop) - 1) / (0 - uint64_t(step)) + 1;
  if (n > uint64_t(max_range))
    return make_error("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", max_range);
  GLIA_TRY(in.tick(n));
  std::vector<value> items;
  items.reserve(n);
  for (uint64_t i = 0; i < n; ++i) items.push_back(value::integer(start + int64_t(i) * step));
  return value::array(std::move(items));
}

// dict(mapping or pairs, **kwargs) as Python builds it.
result<object_data> build_dict(call_args& a, const char* fn) {
  if (a.pos.size() > 1) return make_error("TypeError: {} expected at most 1 argument, got {}", fn, a.pos.size());
  object_data o;
  if (!a.pos.empty()) {
    const value& src = a.pos[0];
    if (src.is_object()) {
      o = src.obj();
    } else if (src.is_namespace()) {
      o = src.ns().attrs;
    } else {
      GLIA_ASSIGN(std::vector<value> items, iterate(src));
      for (const value& pair : items) {
        GLIA_ASSIGN(std::vector<value> kv, unpack(pair, 2));
        if (!hashable(kv[0])) return make_error("TypeError: unhashable type: '{}'", type_name(kv[0]));
        o.set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : a.kw) o.set(value::string(k), v);
  return o;
}

result<value> g_dict(interpreter&, call_args& a) {
  GLIA_ASSIGN(object_data o, build_dict(a, "dict"));
  return value::object(std::move(o));
}

result<value> g_namespace(interpreter& in, call_args& a) {
  GLIA_ASSIGN(object_data o, build_dict(a, "namespace"));
  for (const auto& [k, v] : o.entries) {
    if (holds_namespace(in, v, in.options().limits.max_value_depth * 2))
      return make_error("unsupported: storing a namespace inside a namespace");
    if (!k.is_string()) return make_error("TypeError: keywords must be strings");
  }
  auto ns = std::make_shared<namespace_data>();
  ns->attrs = std::move(o);
  uint32_t d = 0;
  for (const auto& [k, v] : ns->attrs.entries) d = std::max(d, v.depth());
  ns->attrs.depth = d + 1;
  return value::names(std::move(ns));
}

result<value> g_raise(interpreter& in, call_args& a) {
  // HF's raise_exception(message) needs its argument; an empty message would make an empty error.
  if (a.pos.empty()) return in.raise("raise_exception() was called without a message");
  std::string msg = to_str(a.pos[0]);
  if (msg.empty()) msg = "raise_exception() was called with an empty message";
  return in.raise(std::move(msg));
}

civil_time local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return civil_time{tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec};
}

result<value> g_strftime_now(interpreter& in, call_args& a) {
  if (a.pos.size() != 1 || !a.pos[0].is_string()) return make_error("TypeError: strftime_now() takes one format string");
  const civil_time now = in.options().now ? *in.options().now : local_now();
  GLIA_ASSIGN(std::string s, strftime(a.pos[0].str(), now));
  return value::string(std::move(s));
}

// joiner(sep=", "): a callable that returns "" the first time and sep afterwards.
result<value> g_joiner(interpreter&, call_args& a) {
  if (a.pos.size() + a.kw.size() > 1) return make_error("TypeError: joiner() takes at most 1 argument");
  std::string sep = ", ";
  if (!a.pos.empty()) sep = to_str(a.pos[0]);
  else if (!a.kw.empty()) {
    if (a.kw[0].first != "sep") return make_error("TypeError: joiner() got an unexpected keyword argument '{}'", a.kw[0].first);
    sep = to_str(a.kw[0].second);
  }
  auto used = std::make_shared<bool>(false);
  return value::callable("joiner", [sep, used](interpreter&, call_args&) -> result<value> {
    if (!*used) {
      *used = true;
      return value::string("");
    }
    return value::string(sep);
  });
}

// cycler(*items): an object with next(), reset() and current, as Jinja's Cycler. It is a namespace
// whose `current` attribute is rewritten by next()/reset(); the callables hold it weakly (the
// namespace holds them).
result<value> g_cycler(interpreter&, call_args& a) {
  if (a.pos.empty()) return make_error("RuntimeError: at least one item has to be provided");
  if (!a.kw.empty()) return make_error("TypeError: cycler() takes no keyword arguments");
  auto items = std::make_shared<const std::vector<value>>(a.pos);
  auto pos = std::make_shared<size_t>(0);
  auto ns = std::make_shared<namespace_data>();
  std::weak_ptr<namespace_data> weak = ns;
  ns->attrs.set(value::string("items"), value::array(*items, seq_kind::tuple));
  ns->attrs.set(value::string("current"), (*items)[0]);
  ns->attrs.set(value::string("next"), value::callable("next", [items, pos, weak](interpreter&, call_args&) -> result<value> {
    const value out = (*items)[*pos];
    *pos = (*pos + 1) % items->size();
    if (auto n = weak.lock()) n->attrs.set(value::string("current"), (*items)[*pos]);
    return out;
  }));
  ns->attrs.set(value::string("reset"), value::callable("reset", [items, pos, weak](interpreter&, call_args&) -> result<value> {
    *pos = 0;
    if (auto n = weak.lock()) n->attrs.set(value::string("current"), (*items)[0]);
    return value::none();
  }));
  uint32_t d = 0;
  for (const auto& [k, v] : ns->attrs.entries) d = std::max(d, v.depth());
  ns->attrs.depth = d + 1;
  return value::names(std::move(ns));
}

}  // namespace

void install_globals(scope& sc) {
  sc.set("range", value::callable("range", g_range));
  sc.set("dict", value::callable("dict", g_dict));
  sc.set("namespace", value::callable("namespace", g_namespace));
  sc.set("raise_exception", value::callable("raise_exception", g_raise));
  sc.set("strftime_now", value::callable("strftime_now", g_strftime_now));
  sc.set("joiner", value::callable("joiner", g_joiner));
  sc.set("cycler", value::callable("cycler", g_cycler));
}

}  // namespace glia::jinja
