// The tree-walking evaluator: scopes, statement execution, expression evaluation and calls, with
// every budget of render_limits enforced here. Internal to the jinja folder.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/jinja.h"
#include "tokenizer/jinja/value.h"

namespace glia::jinja {

// Variables of one frame. Jinja scopes: the template's top level, each for-loop iteration, each
// macro call, with-blocks. `if` shares its enclosing frame.
struct scope {
  std::shared_ptr<scope> parent;
  std::vector<std::pair<std::string, value>> vars;

  const value* lookup(std::string_view name) const;
  void set(std::string_view name, value v);
};
using scope_ptr = std::shared_ptr<scope>;

enum class flow { normal, brk, cont };

class interpreter {
 public:
  interpreter(std::shared_ptr<const program> prog, const render_options& opt);

  result<std::string> run(const scope_ptr& globals);

  // Budgets.
  status tick(uint64_t steps = 1);
  // A string of `total` bytes is about to be built, `added` of them new (copying costs time too):
  // fails past max_output_bytes, and counts added/16 steps so the total work stays bounded.
  status charge_bytes(size_t total, size_t added);
  status charge_bytes(size_t total) { return charge_bytes(total, total); }
  status check_depth(const value& v) const;
  const render_options& options() const { return opt_; }

  result<value> eval(const expr& e, const scope_ptr& sc);
  result<flow> exec(const stmt_list& body, const scope_ptr& sc, std::string& out);
  result<value> call(const value& callee, call_args& args);

  // raise_exception(msg): the render fails with exactly `msg`.
  error raise(std::string msg);

 private:
  std::shared_ptr<const program> prog_;
  render_options opt_;
  uint64_t steps_ = 0;
  int nesting_ = 0;
  int call_depth_ = 0;
  std::optional<std::string> raised_;
  std::unordered_map<const stmt*, bool> uses_loop_;  // for-loops whose body reads `loop`

  friend struct nesting_guard;
  struct nesting_guard {
    interpreter& in;
    explicit nesting_guard(interpreter& i) : in(i) { ++in.nesting_; }
    ~nesting_guard() { --in.nesting_; }
  };

  result<flow> exec_stmt(const stmt& s, const scope_ptr& sc, std::string& out);
  result<flow> exec_stmt_impl(const stmt& s, const scope_ptr& sc, std::string& out);
  // Prefixes the line of the innermost node an error came from (once).
  error locate(int line, const std::string& msg) const;
  result<flow> exec_for(const stmt& s, const scope_ptr& sc, std::string& out);
  status exec_set(const stmt& s, const scope_ptr& sc, value v);
  status assign(const target& t, const scope_ptr& sc, value v, int line);
  value make_macro(const stmt& def, const scope_ptr& closure, const std::string& name);
  result<value> call_macro(const stmt& def, const scope_ptr& closure, call_args& args, bool uses_varargs,
                           bool uses_kwargs, bool uses_caller);
  status append(std::string& out, std::string_view text);

  result<value> eval_impl(const expr& e, const scope_ptr& sc);
  result<value> eval_call(const expr& e, const scope_ptr& sc);
  result<call_args> eval_args(const expr& e, size_t first, const scope_ptr& sc);
  result<value> eval_filter(const expr& e, const scope_ptr& sc, const value* block_input);
  result<value> eval_compare(const expr& e, const scope_ptr& sc);
  result<value> eval_slice(const expr& e, const scope_ptr& sc);
};

// --- operations shared by the evaluator, filters and methods (ops.cpp) ---

result<value> binary_op(interpreter& in, std::string_view op, const value& a, const value& b);
result<value> unary_minus(const value& v);
// Python's ordering comparisons: op is "<", "<=", ">" or ">=".
result<bool> compare_op(std::string_view op, const value& a, const value& b);
result<bool> contains(const value& container, const value& item);
result<value> slice(interpreter& in, const value& v, const value& start, const value& stop, const value& step);
// Unpacks an iterable into exactly n values (for k, v in ...; set a, b = ...).
result<std::vector<value>> unpack(const value& v, size_t n);
// The error an operation on an Undefined raises.
error undefined_error(const value& u);

// Attribute and item access with Jinja's sandboxed rules (attrs.cpp): obj.name looks for a method
// first, then an item; obj[key] the other way round. Missing members are Undefined values.
result<value> get_attr(const value& obj, const std::string& name);
result<value> get_item(const value& obj, const value& key);
// Python attributes only (methods, namespace attributes), never dict items: the `attr` filter.
result<value> get_python_attr(const value& obj, const std::string& name);

// Filters and tests by name (filters.cpp, tests.cpp).
result<value> apply_filter(interpreter& in, const std::string& name, const value& input, call_args& args);
result<bool> apply_test(interpreter& in, const std::string& name, const value& v, call_args& args);
bool has_test(const std::string& name);

// Namespaces may not hold namespaces (directly or inside lists/dicts): it keeps every value acyclic
// and its nesting bounded. True when `v` holds one (or nests deeper than `budget`).
bool holds_namespace(interpreter& in, const value& v, uint32_t budget);

// Globals (globals.cpp).
void install_globals(scope& sc);

// Python formatting (format.cpp): "fmt" % args and str.format(*args, **kwargs).
result<std::string> percent_format(const std::string& fmt, const value& args);
result<std::string> brace_format(const std::string& fmt, const call_args& args);
result<std::string> strftime(const std::string& fmt, const civil_time& t);

// Reads positional-or-keyword arguments by name, like a Python signature (filters.cpp).
class arg_reader {
 public:
  arg_reader(std::string fn, call_args& args, std::vector<std::string> names);
  // The argument at `index`/`name`, or nullptr when not given.
  const value* get(size_t index) const;
  // Errors for too many positional arguments or unknown keywords.
  status check() const;

 private:
  std::string fn_;
  call_args& args_;
  std::vector<std::string> names_;
};

}  // namespace glia::jinja
