// The values a Jinja template computes with, modelled on the Python objects Jinja2 sees: None, bool,
// int, float, str, list/tuple (and the one-shot generators that filters like map return), dict
// (insertion-ordered), callables, namespace() objects and Undefined. Containers are shared and
// immutable once built (the sandbox HF renders in forbids mutating them), except namespaces.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/status.h"

namespace glia::jinja {

class value;
class interpreter;

enum class kind : uint8_t { undefined, none, boolean, integer, floating, string, array, object, callable, names };

// Lists print as [..], tuples as (..); a generator is what Python's filters yield lazily: always
// truthy, without len() or indexing.
// dict.items()/keys()/values() are views: iterable and sized, printed as dict_items([...]).
enum class seq_kind : uint8_t { list, tuple, generator, view };

// Why a value is undefined; used when an operation on it fails (Jinja's Undefined hint).
struct undefined_info {
  std::string message;    // "'x' is undefined", "'dict object' has no attribute 'role'"
  bool security = false;  // an unsafe attribute of the sandbox: errors are SecurityError
};

struct array_data;
struct object_data;
struct callable_data;
struct namespace_data;

using str_ptr = std::shared_ptr<const std::string>;
using array_ptr = std::shared_ptr<const array_data>;
using object_ptr = std::shared_ptr<const object_data>;
using callable_ptr = std::shared_ptr<const callable_data>;
using namespace_ptr = std::shared_ptr<namespace_data>;

struct none_t {};

class value {
 public:
  value() = default;  // undefined
  static value undefined(std::string message, bool security = false);
  static value none() { return value(none_t{}); }
  static value boolean(bool b) { return value(b); }
  static value integer(int64_t i) { return value(i); }
  static value floating(double d) { return value(d); }
  static value string(std::string s) { return value(std::make_shared<const std::string>(std::move(s))); }
  static value array(std::vector<value> items, seq_kind k = seq_kind::list);
  static value view(std::vector<value> items, std::string_view view_name);
  static value object(object_data o);
  static value callable(std::string name, std::function<result<value>(interpreter&, struct call_args&)> fn);
  static value names(namespace_ptr ns) { return value(std::move(ns)); }

  kind type() const { return static_cast<kind>(v_.index()); }
  bool is_undefined() const { return type() == kind::undefined; }
  bool is_none() const { return type() == kind::none; }
  bool is_bool() const { return type() == kind::boolean; }
  bool is_int() const { return type() == kind::integer; }
  bool is_float() const { return type() == kind::floating; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return type() == kind::string; }
  bool is_array() const { return type() == kind::array; }
  bool is_object() const { return type() == kind::object; }
  bool is_callable() const { return type() == kind::callable; }
  bool is_namespace() const { return type() == kind::names; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // Integer value of an int or bool (Python's bool is an int subclass).
  int64_t int_like() const { return is_bool() ? int64_t(as_bool()) : as_int(); }
  double number() const { return is_float() ? as_float() : double(int_like()); }
  const std::string& str() const { return *std::get<str_ptr>(v_); }
  const array_data& arr() const { return *std::get<array_ptr>(v_); }
  const object_data& obj() const { return *std::get<object_ptr>(v_); }
  const callable_data& fn() const { return *std::get<callable_ptr>(v_); }
  namespace_data& ns() const { return *std::get<namespace_ptr>(v_); }
  const undefined_info* undef() const { return std::get<std::shared_ptr<const undefined_info>>(v_).get(); }
  const void* identity() const;  // for `is sameas` and namespace equality

  // Nesting depth of containers (0 for scalars); bounded so that every recursive walk is safe.
  uint32_t depth() const;

 private:
  using storage = std::variant<std::shared_ptr<const undefined_info>, none_t, bool, int64_t, double, str_ptr,
                               array_ptr, object_ptr, callable_ptr, namespace_ptr>;
  template <typename T>
  explicit value(T x) : v_(std::move(x)) {}
  storage v_;
};

struct array_data {
  std::vector<value> items;
  seq_kind kind = seq_kind::list;
  uint32_t depth = 1;
  std::string_view view_name;  // views: "dict_items", "dict_keys" or "dict_values"
};

// A Python dict: insertion order kept; string keys indexed once the dict is large, other keys
// (ints, tuples) scanned.
struct object_data {
  static constexpr size_t small_size = 16;
  std::vector<std::pair<value, value>> entries;
  std::unordered_map<std::string, size_t> index;  // empty while the dict is small
  uint32_t depth = 1;

  const value* find(const value& key) const;
  const value* find(std::string_view key) const;
  // Inserts or replaces (Python's d[k] = v); the caller checks that the key is hashable.
  void set(value key, value v);
  size_t size() const { return entries.size(); }
};

struct call_args {
  std::vector<value> pos;
  std::vector<std::pair<std::string, value>> kw;
};

struct callable_data {
  std::string name;  // for messages and repr
  std::function<result<value>(interpreter&, call_args&)> fn;
};

struct namespace_data {
  object_data attrs;
};

// --- Python semantics ---------------------------------------------------------------------------

// Python's type name: 'NoneType', 'int', 'str', 'list', 'dict', ...
std::string type_name(const value& v);
bool truthy(const value& v);
// Python ==. Undefined equals only Undefined.
bool equals(const value& a, const value& b);
// Whether a value can be a dict key (lists, dicts and namespaces cannot).
bool hashable(const value& v);
// str(v) as Jinja prints it ({{ v }}): Undefined prints as "", None as "None", lists as their repr.
std::string to_str(const value& v);
std::string repr(const value& v);
// Python's repr of a float: the shortest string that reads back to the same double.
std::string float_repr(double d);
std::string string_repr(std::string_view s);

// The items a `for` loop visits: list items, dict keys, string characters. Non-iterables give an
// error naming Python's TypeError.
result<std::vector<value>> iterate(const value& v);

// Python's len(); errors for values without one.
result<int64_t> length(const value& v);

}  // namespace glia::jinja
