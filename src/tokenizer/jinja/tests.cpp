// Jinja2's builtin tests (`x is defined`, `x is divisibleby 3`, ...), with Python's type rules:
// bool counts as a number but not as an integer; str, list, tuple and dict are sequences.
#include <map>

#include "tokenizer/jinja/filters.h"
#include "core/status.h"
#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {
namespace {

using test_fn = result<bool> (*)(interpreter&, const value&, call_args&);

result<const value*> one_arg(call_args& a, const char* name) {
  arg_reader r(name, a, {"other"});
  GLIA_TRY(r.check());
  if (!r.get(0)) return make_error("TypeError: test '{}' needs an argument", name);
  return r.get(0);
}

status no_args(call_args& a, const char* name) {
  arg_reader r(name, a, {});
  return r.check();
}

template <bool (*P)(const value&)>
result<bool> simple(interpreter&, const value& v, call_args& a) {
  GLIA_TRY(no_args(a, "test"));
  return P(v);
}

bool is_sequence(const value& v) {
  // Python: has len() and __getitem__ (Undefined has both).
  if (v.is_array()) return v.arr().kind == seq_kind::list || v.arr().kind == seq_kind::tuple;
  return v.is_string() || v.is_object() || v.is_undefined();
}

bool is_defined_v(const value& v) { return !v.is_undefined(); }
bool is_undefined_v(const value& v) { return v.is_undefined(); }
bool is_none_v(const value& v) { return v.is_none(); }
bool is_boolean_v(const value& v) { return v.is_bool(); }
bool is_true_v(const value& v) { return v.is_bool() && v.as_bool(); }
bool is_false_v(const value& v) { return v.is_bool() && !v.as_bool(); }
bool is_integer_v(const value& v) { return v.is_int(); }
bool is_float_v(const value& v) { return v.is_float(); }
bool is_number_v(const value& v) { return v.is_number(); }
bool is_string_v(const value& v) { return v.is_string(); }
bool is_mapping_v(const value& v) { return v.is_object(); }
// Jinja's Undefined defines __call__ (to raise), so callable(Undefined) is True.
bool is_callable_v(const value& v) { return v.is_callable() || v.is_undefined(); }
bool is_escaped_v(const value& v) { return false; }

bool is_iterable(const value& v) { return v.is_array() || v.is_string() || v.is_object() || v.is_undefined(); }

result<bool> mod_test(interpreter& in, const value& v, int64_t divisor, int64_t expect) {
  GLIA_ASSIGN(value m, binary_op(in, "%", v, value::integer(divisor)));
  return equals(m, value::integer(expect));
}

result<bool> t_compare(interpreter& in, const value& v, call_args& a, std::string_view op) {
  GLIA_ASSIGN(const value* other, one_arg(a, "compare"));
  if (op == "==") return equals(v, *other);
  if (op == "!=") return !equals(v, *other);
  return compare_op(op, v, *other);
}

result<bool> case_test(const value& v, call_args& a, bool upper) {
  GLIA_TRY(no_args(a, upper ? "upper" : "lower"));
  const std::string s = to_str(v);
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const uint32_t cp = ustr::decode(s, i, len);
    i += len;
    if (ustr::is_cased_upper(cp)) {
      if (!upper) return false;
      cased = true;
    } else if (ustr::is_cased_lower(cp)) {
      if (upper) return false;
      cased = true;
    }
  }
  return cased;
}

const std::map<std::string, test_fn, std::less<>>& table() {
  static const std::map<std::string, test_fn, std::less<>> t = {
      {"defined", simple<is_defined_v>},
      {"undefined", simple<is_undefined_v>},
      {"none", simple<is_none_v>},
      {"boolean", simple<is_boolean_v>},
      {"true", simple<is_true_v>},
      {"false", simple<is_false_v>},
      {"integer", simple<is_integer_v>},
      {"float", simple<is_float_v>},
      {"number", simple<is_number_v>},
      {"string", simple<is_string_v>},
      {"mapping", simple<is_mapping_v>},
      {"iterable", simple<is_iterable>},
      {"sequence", simple<is_sequence>},
      {"callable", simple<is_callable_v>},
      {"escaped", simple<is_escaped_v>},
      {"odd", [](interpreter& in, const value& v, call_args& a) -> result<bool> {
         GLIA_TRY(no_args(a, "odd"));
         return mod_test(in, v, 2, 1);
       }},
      {"even", [](interpreter& in, const value& v, call_args& a) -> result<bool> {
         GLIA_TRY(no_args(a, "even"));
         return mod_test(in, v, 2, 0);
       }},
      {"divisibleby", [](interpreter& in, const value& v, call_args& a) -> result<bool> {
         GLIA_ASSIGN(const value* n, one_arg(a, "divisibleby"));
         GLIA_ASSIGN(value m, binary_op(in, "%", v, *n));
         return equals(m, value::integer(0));
       }},
      {"eq", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "=="); }},
      {"equalto", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "=="); }},
      {"==", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "=="); }},
      {"ne", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "!="); }},
      {"!=", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "!="); }},
      {"lt", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "<"); }},
      {"lessthan", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "<"); }},
      {"<", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "<"); }},
      {"le", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "<="); }},
      {"<=", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, "<="); }},
      {"gt", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, ">"); }},
      {"greaterthan", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, ">"); }},
      {">", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, ">"); }},
      {"ge", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, ">="); }},
      {">=", [](interpreter& in, const value& v, call_args& a) { return t_compare(in, v, a, ">="); }},
      {"in", [](interpreter&, const value& v, call_args& a) -> result<bool> {
         GLIA_ASSIGN(const value* seq, one_arg(a, "in"));
         return contains(*seq, v);
       }},
      {"sameas", [](interpreter&, const value& v, call_args& a) -> result<bool> {
         GLIA_ASSIGN(const value* o, one_arg(a, "sameas"));
         if (v.type() != o->type()) return false;
         if (v.is_none() || v.is_bool() || v.is_undefined()) return equals(v, *o);
         if (v.is_int()) return v.as_int() == o->as_int() && v.as_int() >= -5 && v.as_int() <= 256;  // CPython's cache
         return v.identity() != nullptr && v.identity() == o->identity();
       }},
      {"lower", [](interpreter&, const value& v, call_args& a) { return case_test(v, a, false); }},
      {"upper", [](interpreter&, const value& v, call_args& a) { return case_test(v, a, true); }},
      {"filter", [](interpreter&, const value& v, call_args& a) -> result<bool> {
         GLIA_TRY(no_args(a, "filter"));
         return v.is_string() && has_filter(v.str());
       }},
      {"test", [](interpreter&, const value& v, call_args& a) -> result<bool> {
         GLIA_TRY(no_args(a, "test"));
         return v.is_string() && has_test(v.str());
       }},
  };
  return t;
}

}  // namespace

bool has_test(const std::string& name) { return table().count(name) != 0; }

result<bool> apply_test(interpreter& in, const std::string& name, const value& v, call_args& args) {
  auto it = table().find(name);
  if (it == table().end()) return make_error("TemplateAssertionError: No test named '{}'.", name);
  return it->second(in, v, args);
}

}  // namespace glia::jinja
