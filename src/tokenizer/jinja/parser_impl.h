// The recursive-descent parser, shared by parser.cpp (statements) and parser_expr.cpp
// (expressions). Internal to the jinja folder.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"
#include "core/status.h"

namespace glia::jinja::detail {

inline expr_ptr make_expr(expr_kind k, int line) {
  auto e = std::make_unique<expr>();
  e->kind = k;
  e->line = line;
  return e;
}

inline stmt_ptr make_stmt(stmt_kind k, int line) {
  auto s = std::make_unique<stmt>();
  s->kind = k;
  s->line = line;
  return s;
}

inline std::string describe(const token& t) {
  switch (t.type) {
    case tok::eof: return "end of template";
    case tok::var_end: return "end of print statement";
    case tok::block_end: return "end of statement block";
    case tok::string: return "string";
    case tok::integer:
    case tok::floating: return "number";
    default: return "'" + t.text + "'";
  }
}

class parser {
 public:
  parser(std::vector<token> toks, int max_depth) : t_(std::move(toks)), max_depth_(max_depth) {}

  result<stmt_list> parse_all() {
    GLIA_ASSIGN(stmt_list body, subparse({}));
    if (cur().type != tok::eof) return fail(cur(), "unexpected " + describe(cur()));
    return body;
  }

 private:
  std::vector<token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int max_depth_;
  int loop_depth_ = 0;

  // Counts parser recursion; a template nesting deeper than the limit is refused.
  struct depth_guard {
    parser& p;
    explicit depth_guard(parser& pp) : p(pp) { ++p.depth_; }
    ~depth_guard() { --p.depth_; }
    bool too_deep() const { return p.depth_ > p.max_depth_; }
  };

  const token& cur() const { return t_[i_]; }
  const token& look(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(std::string_view op) const { return cur().type == tok::op && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().type == tok::name && cur().text == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }

  static error fail(const token& t, const std::string& msg) {
    return make_error("line {}: TemplateSyntaxError: {}", t.line, msg);
  }
  error too_deep() const { return make_error("line {}: template nests deeper than the limit of {}", cur().line, max_depth_); }

  status expect_op(std::string_view op) {
    if (!skip_op(op)) return fail(cur(), "expected '" + std::string(op) + "', got " + describe(cur()));
    return {};
  }
  status expect_block_end() {
    if (cur().type != tok::block_end) return fail(cur(), "expected end of statement block, got " + describe(cur()));
    next();
    return {};
  }
  result<std::string> expect_name() {
    if (cur().type != tok::name) return fail(cur(), "expected a name, got " + describe(cur()));
    std::string n = cur().text;
    next();
    return n;
  }

  // Statements (parser.cpp).
  // Parses until a block tag named in `ends` (left unconsumed) or the end of the template.
  result<stmt_list> subparse(std::initializer_list<std::string_view> ends);
  // After `{%` of a closing tag: consumes `{% name %}`.
  status end_tag(std::string_view name);
  result<stmt_ptr> parse_statement();
  result<stmt_ptr> parse_if(int line);
  result<target> parse_target(bool with_namespace, std::initializer_list<std::string_view> extra_end, int depth = 0);
  result<stmt_ptr> parse_for(int line);
  result<stmt_ptr> parse_set(int line);
  result<std::vector<std::pair<std::string, expr_ptr>>> parse_signature();
  result<stmt_ptr> parse_macro(int line);
  result<stmt_ptr> parse_call_block(int line);
  result<stmt_ptr> parse_filter_block(int line);
  result<stmt_ptr> parse_with(int line);

  // Expressions (parser_expr.cpp).
  // One subscript: an expression (kept in `start`), or start:stop:step.
  struct subscript_part {
    bool is_slice = false;
    expr_ptr start, stop, step;
  };

  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const;
  result<expr_ptr> parse_tuple(bool simplified, bool with_condexpr, std::initializer_list<std::string_view> extra_end, bool explicit_parens);
  result<expr_ptr> parse_expression(bool with_condexpr);
  expr_ptr binary(std::string op, expr_ptr l, expr_ptr r, int line);
  result<expr_ptr> parse_or();
  result<expr_ptr> parse_and();
  result<expr_ptr> parse_not();
  result<expr_ptr> parse_compare();
  result<expr_ptr> parse_math1();
  result<expr_ptr> parse_concat();
  result<expr_ptr> parse_math2();
  result<expr_ptr> parse_pow();
  result<expr_ptr> parse_unary(bool with_filter);
  result<expr_ptr> parse_primary();
  result<expr_ptr> parse_list();
  result<expr_ptr> parse_dict();
  result<expr_ptr> parse_postfix(expr_ptr node);
  result<expr_ptr> parse_filter_expr(expr_ptr node);
  result<expr_ptr> parse_subscript(expr_ptr node);
  result<subscript_part> parse_subscribed();
  result<expr_ptr> parse_call(expr_ptr callee);
  status parse_call_args(expr& c);
  result<std::string> dotted_name();
  // `| f | g(args)`; with start_inline the first `|` is absent ({% filter f %}).
  result<expr_ptr> parse_filters(expr_ptr node, bool start_inline = false);
  result<expr_ptr> parse_test(expr_ptr node);
};

}  // namespace glia::jinja::detail
