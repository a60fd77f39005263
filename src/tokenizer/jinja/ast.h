// The syntax tree the parser builds and the interpreter walks. One node struct per category keeps
// the tree plain data; which fields a node uses depends on its kind (noted per kind).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace glia::jinja {

struct expr;
struct stmt;
using expr_ptr = std::unique_ptr<expr>;
using stmt_ptr = std::unique_ptr<stmt>;
using stmt_list = std::vector<stmt_ptr>;

enum class expr_kind : uint8_t {
  literal,    // lit
  name,       // name
  list,       // args: items
  tuple,      // args: items
  dict,       // args: key, value, key, value, ...
  getattr,    // args[0] . name
  getitem,    // args[0] [ args[1] ]
  slice,      // args[0] [ args[1] : args[2] : args[3] ] (null parts are omitted bounds)
  call,       // args[0] ( args[1..], kwargs, dyn_args, dyn_kwargs )
  filter,     // args[0] | name ( args[1..], kwargs ); args[0] null inside {% filter %}
  test,       // args[0] is name ( args[1..], kwargs )
  op_not,     // not args[0]
  neg,        // - args[0]
  pos,        // + args[0]
  binary,     // args[0] name args[1]: + - * / // % ** and or
  concat,     // args[0] ~ args[1] ~ ...
  compare,    // args[0] ops[0] args[1] ops[1] args[2] ... (chained like Python)
  cond,       // args[1] if args[0] else args[2] (args[2] may be null)
};

struct expr {
  expr_kind kind;
  int line = 0;
  value lit;
  std::string name;
  std::vector<expr_ptr> args;
  std::vector<std::pair<std::string, expr_ptr>> kwargs;
  expr_ptr dyn_args, dyn_kwargs;  // *args, **kwargs of a call
  std::vector<std::string> ops;   // compare: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
};

// An assignment target: a name, a namespace attribute (ns.attr) or a tuple of names.
struct target {
  std::vector<std::string> names;  // one name unless unpacking (all names, nested ones included)
  std::string attr;                // set: names[0].attr when not empty
  bool tuple = false;
  std::vector<target> nested;      // `a, (b, c)`: one target per element when any is a tuple
};

enum class stmt_kind : uint8_t {
  text,       // text
  output,     // {{ value }}
  if_,        // branches (condition, body); else_body
  for_,       // loop_target in value [if cond] body else else_body
  set,        // set_target = value
  set_block,  // set_target = rendered body, through filter (may be null)
  macro,      // name(params) body
  call_block, // value (the call expression) with caller(params) = body
  filter_block,  // filter applied to the rendered body
  with,       // params (name = value) in a new scope over body
  scope_body, // body rendered in place, in an inner scope: {% generation %}, {% autoescape %}
  break_,
  continue_,
};

struct stmt {
  stmt_kind kind;
  int line = 0;
  std::string text;
  std::string name;
  expr_ptr value_expr;
  expr_ptr cond;     // for: the `if` filter
  expr_ptr filter;   // set_block / filter_block: a filter chain whose innermost input is null
  target tgt;
  std::vector<std::pair<expr_ptr, stmt_list>> branches;
  stmt_list body, else_body;
  std::vector<std::pair<std::string, expr_ptr>> params;  // macro/caller parameters with defaults
};

struct program {
  stmt_list body;
};

}  // namespace glia::jinja
