// Jinja2's builtin filters over sequences and mappings (the text filters are in filters_text.cpp).
// Filters that Jinja2 implements as generators (map, select, items, unique, batch, reverse) return
// generator values, which behave as in Python: always true, no len(), consumed by list/join/for.
#include "tokenizer/jinja/filters.h"

#include <algorithm>
#include <map>

#include "core/status.h"
#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {

arg_reader::arg_reader(std::string fn, call_args& args, std::vector<std::string> names)
    : fn_(std::move(fn)), args_(args), names_(std::move(names)) {}

const value* arg_reader::get(size_t index) const {
  if (index < args_.pos.size()) return &args_.pos[index];
  if (index >= names_.size()) return nullptr;
  for (const auto& [k, v] : args_.kw)
    if (k == names_[index]) return &v;
  return nullptr;
}

status arg_reader::check() const {
  if (args_.pos.size() > names_.size())
    return make_error("TypeError: {}() takes at most {} argument(s) ({} given)", fn_, names_.size(), args_.pos.size());
  for (const auto& [k, v] : args_.kw) {
    auto it = std::find(names_.begin(), names_.end(), k);
    if (it == names_.end()) return make_error("TypeError: {}() got an unexpected keyword argument '{}'", fn_, k);
    if (size_t(it - names_.begin()) < args_.pos.size())
      return make_error("TypeError: {}() got multiple values for argument '{}'", fn_, k);
  }
  return {};
}

namespace filters {

result<attr_getter> make_attr_getter(const value* attribute, const value* dflt) {
  attr_getter g;
  if (!attribute || attribute->is_none()) return g;
  if (attribute->is_int()) {
    g.parts.push_back(*attribute);
  } else if (attribute->is_string()) {
    static const std::string dot = ".";
    for (const auto& part : ustr::split(attribute->str(), &dot, -1)) {
      const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      g.parts.push_back(digits ? value::integer(std::stoll(part)) : value::string(part));
    }
  } else {
    return make_error("TypeError: attribute must be a string or an integer, not {}", type_name(*attribute));
  }
  if (dflt) g.dflt = *dflt;
  return g;
}

result<value> attr_getter::operator()(const value& item) const {
  value v = item;
  for (const value& p : parts) {
    GLIA_ASSIGN(v, get_item(v, p));
    if (v.is_undefined() && dflt) return *dflt;
  }
  return v;
}

value lower_key(const value& v) { return v.is_string() ? value::string(ustr::lower(v.str())) : v; }

status sort_values(std::vector<value>& keys, std::vector<size_t>& order, bool reverse) {
  std::optional<error> err;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (err) return false;
    auto lt = compare_op("<", reverse ? keys[b] : keys[a], reverse ? keys[a] : keys[b]);
    if (!lt) {
      err = lt.take_error();
      return false;
    }
    return *lt;
  });
  if (err) return *err;
  return {};
}

}  // namespace filters

namespace {

using namespace filters;

value generator(std::vector<value> items) { return value::array(std::move(items), seq_kind::generator); }

result<value> f_length(interpreter&, const value& v, call_args& a) {
  arg_reader r("length", a, {});
  GLIA_TRY(r.check());
  GLIA_ASSIGN(int64_t n, length(v));
  return value::integer(n);
}

result<value> f_list(interpreter& in, const value& v, call_args& a) {
  arg_reader r("list", a, {});
  GLIA_TRY(r.check());
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size()));
  return value::array(std::move(items));
}

result<value> f_first_last(const value& v, call_args& a, bool last) {
  arg_reader r(last ? "last" : "first", a, {});
  GLIA_TRY(r.check());
  if (last && v.is_array() && v.arr().kind == seq_kind::generator)
    return make_error("TypeError: 'generator' object is not reversible");
  // do_last is next(iter(reversed(seq))).
  if (last && !v.is_array() && !v.is_string() && !v.is_object() && !v.is_undefined())
    return make_error("TypeError: '{}' object is not reversible", type_name(v));
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  if (items.empty()) return value::undefined(fmt::format("No {} item, sequence was empty.", last ? "last" : "first"));
  return last ? items.back() : items.front();
}

result<value> f_default(interpreter&, const value& v, call_args& a) {
  arg_reader r("default", a, {"default_value", "boolean"});
  GLIA_TRY(r.check());
  const bool boolean = r.get(1) && truthy(*r.get(1));
  if (v.is_undefined() || (boolean && !truthy(v))) return r.get(0) ? *r.get(0) : value::string("");
  return v;
}

result<value> f_join(interpreter& in, const value& v, call_args& a) {
  arg_reader r("join", a, {"d", "attribute"});
  GLIA_TRY(r.check());
  GLIA_ASSIGN(attr_getter get, make_attr_getter(r.get(1), nullptr));
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  const std::string sep = r.get(0) ? to_str(*r.get(0)) : "";
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    GLIA_ASSIGN(value x, get(items[i]));
    const size_t before = out.size();
    if (i) out += sep;
    out += to_str(x);
    GLIA_TRY(in.charge_bytes(out.size(), out.size() - before));
  }
  GLIA_TRY(in.tick(items.size()));
  return value::string(std::move(out));
}

result<value> f_map(interpreter& in, const value& v, call_args& a) {
  // Jinja2's do_map starts with `if value:`, so a falsy value (None, 0, "") maps to nothing, its
  // arguments unchecked (message.tool_calls|map(...) where tool_calls is None).
  if (!truthy(v)) return generator({});
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size()));
  std::vector<value> out;
  out.reserve(items.size());
  if (a.pos.empty()) {
    // map(attribute='x', default=...)
    arg_reader r("map", a, {"attribute", "default"});
    GLIA_TRY(r.check());
    if (!r.get(0)) return make_error("FilterArgumentError: map requires a filter argument");
    GLIA_ASSIGN(attr_getter get, make_attr_getter(r.get(0), r.get(1)));
    for (const value& x : items) {
      GLIA_ASSIGN(value y, get(x));
      out.push_back(std::move(y));
    }
    return generator(std::move(out));
  }
  if (!a.pos[0].is_string()) return make_error("TypeError: map() filter name must be a string");
  const std::string name = a.pos[0].str();
  // Looked up while rendering (environment.call_filter), hence TemplateRuntimeError.
  if (!has_filter(name)) return make_error("TemplateRuntimeError: No filter named '{}'.", name);
  for (const value& x : items) {
    call_args rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    GLIA_ASSIGN(value y, apply_filter(in, name, x, rest));
    out.push_back(std::move(y));
  }
  return generator(std::move(out));
}

// select/reject(test, *args) and selectattr/rejectattr(attr, test, *args).
result<value> f_select(interpreter& in, const value& v, call_args& a, bool by_attr, bool keep_when) {
  if (!truthy(v)) return generator({});  // as map: Jinja2's select_or_reject starts with `if value:`
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size()));
  size_t next = 0;
  attr_getter get;
  if (by_attr) {
    if (a.pos.empty()) return make_error("TypeError: Missing parameter for attribute name");
    GLIA_ASSIGN(get, make_attr_getter(&a.pos[0], nullptr));
    next = 1;
  }
  std::string test;
  if (next < a.pos.size()) {
    if (!a.pos[next].is_string()) return make_error("TypeError: test name must be a string");
    test = a.pos[next].str();
    ++next;
    if (!has_test(test)) return make_error("TemplateRuntimeError: No test named '{}'.", test);
  }
  std::vector<value> out;
  for (const value& x : items) {
    GLIA_ASSIGN(value probe, get(x));
    bool ok;
    if (test.empty()) {
      ok = truthy(probe);
    } else {
      call_args rest;
      rest.pos.assign(a.pos.begin() + long(next), a.pos.end());
      rest.kw = a.kw;
      GLIA_ASSIGN(ok, apply_test(in, test, probe, rest));
    }
    if (ok == keep_when) out.push_back(x);
  }
  return generator(std::move(out));
}

result<value> f_items(interpreter& in, const value& v, call_args& a) {
  arg_reader r("items", a, {});
  GLIA_TRY(r.check());
  if (v.is_undefined()) return generator({});
  if (!v.is_object()) return make_error("TypeError: Can only get item pairs from a mapping.");
  GLIA_TRY(in.tick(v.obj().size()));
  std::vector<value> out;
  for (const auto& [k, x] : v.obj().entries) out.push_back(value::array({k, x}, seq_kind::tuple));
  return generator(std::move(out));
}

result<value> f_dictsort(interpreter& in, const value& v, call_args& a) {
  arg_reader r("dictsort", a, {"case_sensitive", "by", "reverse"});
  GLIA_TRY(r.check());
  if (v.is_undefined()) return undefined_error(v);  // do_dictsort calls value.items()
  if (!v.is_object()) return make_error("AttributeError: '{}' object has no attribute 'items'", type_name(v));
  const bool cs = r.get(0) && truthy(*r.get(0));
  const std::string by = r.get(1) ? to_str(*r.get(1)) : "key";
  if (by != "key" && by != "value") return make_error("FilterArgumentError: You can only sort by either \"key\" or \"value\"");
  const bool rev = r.get(2) && truthy(*r.get(2));
  const auto& entries = v.obj().entries;
  GLIA_TRY(in.tick(entries.size() * 4));
  std::vector<value> keys;
  std::vector<size_t> order;
  for (size_t i = 0; i < entries.size(); ++i) {
    const value& k = by == "key" ? entries[i].first : entries[i].second;
    keys.push_back(cs ? k : lower_key(k));
    order.push_back(i);
  }
  GLIA_TRY(sort_values(keys, order, rev));
  std::vector<value> out;
  for (size_t i : order) out.push_back(value::array({entries[i].first, entries[i].second}, seq_kind::tuple));
  return value::array(std::move(out));
}

result<value> f_sort(interpreter& in, const value& v, call_args& a) {
  arg_reader r("sort", a, {"reverse", "case_sensitive", "attribute"});
  GLIA_TRY(r.check());
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size() * 4));
  const bool rev = r.get(0) && truthy(*r.get(0));
  const bool cs = r.get(1) && truthy(*r.get(1));
  // sort(attribute='a,b') sorts by a tuple of attributes (Jinja's make_multi_attrgetter).
  std::vector<attr_getter> getters;
  if (const value* at = r.get(2); at && at->is_string() && at->str().find(',') != std::string::npos) {
    static const std::string comma = ",";
    for (const auto& part : ustr::split(at->str(), &comma, -1)) {
      const value name = value::string(part);
      GLIA_ASSIGN(attr_getter g, make_attr_getter(&name, nullptr));
      getters.push_back(std::move(g));
    }
  } else {
    GLIA_ASSIGN(attr_getter g, make_attr_getter(r.get(2), nullptr));
    getters.push_back(std::move(g));
  }
  std::vector<value> keys;
  std::vector<size_t> order;
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<value> parts;
    for (const attr_getter& get : getters) {
      GLIA_ASSIGN(value k, get(items[i]));
      parts.push_back(cs ? k : lower_key(k));
    }
    keys.push_back(parts.size() == 1 ? std::move(parts[0]) : value::array(std::move(parts), seq_kind::tuple));
    order.push_back(i);
  }
  GLIA_TRY(sort_values(keys, order, rev));
  std::vector<value> out;
  for (size_t i : order) out.push_back(items[i]);
  return value::array(std::move(out));
}

result<value> f_unique(interpreter& in, const value& v, call_args& a) {
  arg_reader r("unique", a, {"case_sensitive", "attribute"});
  GLIA_TRY(r.check());
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size()));
  const bool cs = r.get(0) && truthy(*r.get(0));
  GLIA_ASSIGN(attr_getter get, make_attr_getter(r.get(1), nullptr));
  std::vector<value> seen, out;
  for (const value& x : items) {
    GLIA_ASSIGN(value k, get(x));
    if (!cs) k = lower_key(k);
    if (!hashable(k)) return make_error("TypeError: unhashable type: '{}'", type_name(k));
    GLIA_TRY(in.tick(seen.size() / 16));
    if (std::any_of(seen.begin(), seen.end(), [&](const value& s) { return equals(s, k); })) continue;
    seen.push_back(std::move(k));
    out.push_back(x);
  }
  return generator(std::move(out));
}

result<value> f_reverse(interpreter& in, const value& v, call_args& a) {
  arg_reader r("reverse", a, {});
  GLIA_TRY(r.check());
  if (v.is_string()) {
    auto chars = ustr::chars(v.str());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return value::string(std::move(out));
  }
  // do_reverse turns the TypeError of reversed()/list() on a scalar into FilterArgumentError.
  if (!v.is_array() && !v.is_object() && !v.is_undefined() && !v.is_string())
    return make_error("FilterArgumentError: argument must be iterable");
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size()));
  std::reverse(items.begin(), items.end());
  // Lists and tuples give a reverse iterator; anything else is copied into a list first.
  if (v.is_array() && (v.arr().kind == seq_kind::list || v.arr().kind == seq_kind::tuple)) return generator(std::move(items));
  return value::array(std::move(items));
}

result<value> f_batch(interpreter& in, const value& v, call_args& a) {
  arg_reader r("batch", a, {"linecount", "fill_with"});
  GLIA_TRY(r.check());
  if (!r.get(0) || !(r.get(0)->is_int() || r.get(0)->is_bool())) return make_error("TypeError: batch() needs an integer line count");
  const int64_t n = r.get(0)->int_like();
  if (n <= 0) return make_error("ValueError: batch size must be positive");
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size() + (r.get(1) && !r.get(1)->is_none() ? size_t(n) : 0)));  // fill_with pads up to n
  std::vector<value> out, cur;
  for (const value& x : items) {
    cur.push_back(x);
    if (int64_t(cur.size()) == n) out.push_back(value::array(std::move(cur))), cur.clear();
  }
  if (!cur.empty()) {
    if (r.get(1) && !r.get(1)->is_none())
      while (int64_t(cur.size()) < n) cur.push_back(*r.get(1));
    out.push_back(value::array(std::move(cur)));
  }
  return generator(std::move(out));
}

// Jinja's slice: the items in `slices` columns, the first len % slices one longer; fill_with pads
// the shorter ones.
result<value> f_slice(interpreter& in, const value& v, call_args& a) {
  arg_reader r("slice", a, {"slices", "fill_with"});
  GLIA_TRY(r.check());
  if (!r.get(0) || !(r.get(0)->is_int() || r.get(0)->is_bool())) return make_error("TypeError: slice() needs an integer count of slices");
  const int64_t n = r.get(0)->int_like();
  if (n <= 0) return make_error("ValueError: the count of slices must be positive");
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size() + size_t(n)));  // n columns are made, however few the items
  const int64_t len = int64_t(items.size()), per = len / n, with_extra = len % n;
  std::vector<value> out;
  int64_t offset = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t start = offset + k * per;
    if (k < with_extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    std::vector<value> column(items.begin() + start, items.begin() + end);
    if (r.get(1) && !r.get(1)->is_none() && k >= with_extra) column.push_back(*r.get(1));
    out.push_back(value::array(std::move(column)));
  }
  return generator(std::move(out));
}

result<value> f_sum(interpreter& in, const value& v, call_args& a) {
  arg_reader r("sum", a, {"attribute", "start"});
  GLIA_TRY(r.check());
  GLIA_ASSIGN(attr_getter get, make_attr_getter(r.get(0), nullptr));
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  value total = r.get(1) ? *r.get(1) : value::integer(0);
  for (const value& x : items) {
    GLIA_ASSIGN(value y, get(x));
    if (total.is_string()) return make_error("TypeError: sum() can't sum strings [use ''.join(seq) instead]");
    GLIA_ASSIGN(total, binary_op(in, "+", total, y));
  }
  return total;
}

result<value> f_minmax(interpreter& in, const value& v, call_args& a, bool max) {
  arg_reader r(max ? "max" : "min", a, {"case_sensitive", "attribute"});
  GLIA_TRY(r.check());
  const bool cs = r.get(0) && truthy(*r.get(0));
  GLIA_ASSIGN(attr_getter get, make_attr_getter(r.get(1), nullptr));
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  GLIA_TRY(in.tick(items.size()));
  if (items.empty()) return value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  GLIA_ASSIGN(value best_key, get(items[0]));
  if (!cs) best_key = lower_key(best_key);
  for (size_t i = 1; i < items.size(); ++i) {
    GLIA_ASSIGN(value k, get(items[i]));
    if (!cs) k = lower_key(k);
    GLIA_ASSIGN(bool better, compare_op(max ? ">" : "<", k, best_key));
    if (better) best = i, best_key = std::move(k);
  }
  return items[best];
}

result<value> f_attr(interpreter&, const value& v, call_args& a) {
  arg_reader r("attr", a, {"name"});
  GLIA_TRY(r.check());
  if (!r.get(0)) return make_error("TypeError: attr() missing required argument 'name'");
  return get_python_attr(v, to_str(*r.get(0)));
}

result<value> f_tojson(interpreter& in, const value& v, call_args& a) {
  // HF's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  arg_reader r("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  GLIA_TRY(r.check());
  dumps_options o;
  o.ensure_ascii = r.get(0) && truthy(*r.get(0));
  if (const value* ind = r.get(1); ind && !ind->is_none()) {
    if (ind->is_string()) o.indent = ind->str();
    else if (ind->is_int() || ind->is_bool()) o.indent = std::string(size_t(std::max<int64_t>(0, std::min<int64_t>(ind->int_like(), 1024))), ' ');
    else return make_error("TypeError: tojson indent must be an integer or a string");
  }
  if (const value* sep = r.get(2); sep && !sep->is_none()) {
    GLIA_ASSIGN(std::vector<value> parts, unpack(*sep, 2));
    if (!parts[0].is_string() || !parts[1].is_string()) return make_error("TypeError: tojson separators must be strings");
    o.item_separator = parts[0].str();
    o.key_separator = parts[1].str();
  }
  o.sort_keys = r.get(3) && truthy(*r.get(3));
  GLIA_ASSIGN(std::string s, dumps(v, o, in.options().limits.max_output_bytes));
  GLIA_TRY(in.charge_bytes(s.size()));
  return value::string(std::move(s));
}

}  // namespace

const std::map<std::string, filter_fn, std::less<>>& sequence_filters() {
  static const std::map<std::string, filter_fn, std::less<>> table = {
      {"length", f_length},
      {"count", f_length},
      {"list", f_list},
      {"first", [](interpreter&, const value& v, call_args& a) { return f_first_last(v, a, false); }},
      {"last", [](interpreter&, const value& v, call_args& a) { return f_first_last(v, a, true); }},
      {"default", f_default},
      {"d", f_default},
      {"join", f_join},
      {"map", f_map},
      {"select", [](interpreter& in, const value& v, call_args& a) { return f_select(in, v, a, false, true); }},
      {"reject", [](interpreter& in, const value& v, call_args& a) { return f_select(in, v, a, false, false); }},
      {"selectattr", [](interpreter& in, const value& v, call_args& a) { return f_select(in, v, a, true, true); }},
      {"rejectattr", [](interpreter& in, const value& v, call_args& a) { return f_select(in, v, a, true, false); }},
      {"items", f_items},
      {"dictsort", f_dictsort},
      {"sort", f_sort},
      {"unique", f_unique},
      {"reverse", f_reverse},
      {"batch", f_batch},
      {"slice", f_slice},
      {"sum", f_sum},
      {"min", [](interpreter& in, const value& v, call_args& a) { return f_minmax(in, v, a, false); }},
      {"max", [](interpreter& in, const value& v, call_args& a) { return f_minmax(in, v, a, true); }},
      {"attr", f_attr},
      {"tojson", f_tojson},
  };
  return table;
}

result<value> apply_filter(interpreter& in, const std::string& name, const value& input, call_args& args) {
  for (const auto* table : {&sequence_filters(), &text_filters()}) {
    auto it = table->find(name);
    if (it != table->end()) return it->second(in, input, args);
  }
  return make_error("TemplateAssertionError: No filter named '{}'.", name);
}

bool has_filter(const std::string& name) { return sequence_filters().count(name) || text_filters().count(name); }

}  // namespace glia::jinja
