// Expressions, with Jinja2's precedence: conditional < or < and < not < comparisons < + - < ~ <
// * / // % < ** < unary - + < postfix (. [] ()) and filters/tests, which bind tightest.
#include "tokenizer/jinja/parser_impl.h"

namespace glia::jinja::detail {

bool parser::is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
  if (cur().type == tok::var_end || cur().type == tok::block_end || cur().type == tok::eof || is_op(")"))
    return true;
  for (auto e : extra_end)
    if (is_name(e)) return true;
  return false;
}

result<expr_ptr> parser::parse_tuple(bool simplified, bool with_condexpr, std::initializer_list<std::string_view> extra_end, bool explicit_parens) {
  const int line = cur().line;
  std::vector<expr_ptr> items;
  bool is_tuple = false;
  for (;;) {
    if (!items.empty()) GLIA_TRY(expect_op(","));
    if (is_tuple_end(extra_end)) break;
    if (simplified) {
      GLIA_ASSIGN(expr_ptr e, parse_primary());
      items.push_back(std::move(e));
    } else {
      GLIA_ASSIGN(expr_ptr e, parse_expression(with_condexpr));
      items.push_back(std::move(e));
    }
    if (is_op(",")) is_tuple = true;
    else break;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) return fail(cur(), "Expected an expression, got " + describe(cur()));
  }
  auto t = make_expr(expr_kind::tuple, line);
  t->args = std::move(items);
  return t;
}

result<expr_ptr> parser::parse_expression(bool with_condexpr) {
  depth_guard g(*this);
  if (g.too_deep()) return too_deep();
  if (!with_condexpr) return parse_or();
  GLIA_ASSIGN(expr_ptr e, parse_or());
  while (is_name("if")) {
    const int line = cur().line;
    next();
    auto c = make_expr(expr_kind::cond, line);
    GLIA_ASSIGN(expr_ptr test, parse_or());
    expr_ptr otherwise;
    if (skip_name("else")) {
      GLIA_ASSIGN(otherwise, parse_expression(true));
    }
    c->args.push_back(std::move(test));
    c->args.push_back(std::move(e));
    c->args.push_back(std::move(otherwise));
    e = std::move(c);
  }
  return e;
}

expr_ptr parser::binary(std::string op, expr_ptr l, expr_ptr r, int line) {
  auto b = make_expr(expr_kind::binary, line);
  b->name = std::move(op);
  b->args.push_back(std::move(l));
  b->args.push_back(std::move(r));
  return b;
}

result<expr_ptr> parser::parse_or() {
  GLIA_ASSIGN(expr_ptr l, parse_and());
  while (is_name("or")) {
    const int line = cur().line;
    next();
    GLIA_ASSIGN(expr_ptr r, parse_and());
    l = binary("or", std::move(l), std::move(r), line);
  }
  return l;
}

result<expr_ptr> parser::parse_and() {
  GLIA_ASSIGN(expr_ptr l, parse_not());
  while (is_name("and")) {
    const int line = cur().line;
    next();
    GLIA_ASSIGN(expr_ptr r, parse_not());
    l = binary("and", std::move(l), std::move(r), line);
  }
  return l;
}

result<expr_ptr> parser::parse_not() {
  if (is_name("not")) {
    depth_guard g(*this);
    if (g.too_deep()) return too_deep();
    auto n = make_expr(expr_kind::op_not, cur().line);
    next();
    GLIA_ASSIGN(expr_ptr inner, parse_not());
    n->args.push_back(std::move(inner));
    return n;
  }
  return parse_compare();
}

result<expr_ptr> parser::parse_compare() {
  const int line = cur().line;
  GLIA_ASSIGN(expr_ptr first, parse_math1());
  auto c = make_expr(expr_kind::compare, line);
  c->args.push_back(std::move(first));
  for (;;) {
    static constexpr std::string_view ops[] = {"==", "!=", "<", "<=", ">", ">="};
    std::string op;
    if (cur().type == tok::op && std::find(std::begin(ops), std::end(ops), cur().text) != std::end(ops)) {
      op = cur().text;
      next();
    } else if (is_name("in")) {
      op = "in";
      next();
    } else if (is_name("not") && look().type == tok::name && look().text == "in") {
      op = "notin";
      next(), next();
    } else {
      break;
    }
    GLIA_ASSIGN(expr_ptr r, parse_math1());
    c->ops.push_back(op);
    c->args.push_back(std::move(r));
  }
  if (c->ops.empty()) return std::move(c->args[0]);
  return c;
}

result<expr_ptr> parser::parse_math1() {
  GLIA_ASSIGN(expr_ptr l, parse_concat());
  while (is_op("+") || is_op("-")) {
    const std::string op = cur().text;
    const int line = cur().line;
    next();
    GLIA_ASSIGN(expr_ptr r, parse_concat());
    l = binary(op, std::move(l), std::move(r), line);
  }
  return l;
}

result<expr_ptr> parser::parse_concat() {
  const int line = cur().line;
  GLIA_ASSIGN(expr_ptr first, parse_math2());
  if (!is_op("~")) return first;
  auto c = make_expr(expr_kind::concat, line);
  c->args.push_back(std::move(first));
  while (skip_op("~")) {
    GLIA_ASSIGN(expr_ptr r, parse_math2());
    c->args.push_back(std::move(r));
  }
  return c;
}

result<expr_ptr> parser::parse_math2() {
  GLIA_ASSIGN(expr_ptr l, parse_pow());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const std::string op = cur().text;
    const int line = cur().line;
    next();
    GLIA_ASSIGN(expr_ptr r, parse_pow());
    l = binary(op, std::move(l), std::move(r), line);
  }
  return l;
}

result<expr_ptr> parser::parse_pow() {
  GLIA_ASSIGN(expr_ptr l, parse_unary(true));
  while (is_op("**")) {
    const int line = cur().line;
    next();
    GLIA_ASSIGN(expr_ptr r, parse_unary(true));
    l = binary("**", std::move(l), std::move(r), line);
  }
  return l;
}

result<expr_ptr> parser::parse_unary(bool with_filter) {
  depth_guard g(*this);
  if (g.too_deep()) return too_deep();
  expr_ptr node;
  if (is_op("-") || is_op("+")) {
    auto u = make_expr(is_op("-") ? expr_kind::neg : expr_kind::pos, cur().line);
    next();
    GLIA_ASSIGN(expr_ptr inner, parse_unary(false));
    u->args.push_back(std::move(inner));
    node = std::move(u);
  } else {
    GLIA_ASSIGN(node, parse_primary());
  }
  GLIA_ASSIGN(node, parse_postfix(std::move(node)));
  if (with_filter) {
    GLIA_ASSIGN(node, parse_filter_expr(std::move(node)));
  }
  return node;
}

result<expr_ptr> parser::parse_primary() {
  depth_guard g(*this);
  if (g.too_deep()) return too_deep();
  const token& t = cur();
  switch (t.type) {
    case tok::name: {
      auto e = make_expr(expr_kind::literal, t.line);
      if (t.text == "true" || t.text == "True") e->lit = value::boolean(true);
      else if (t.text == "false" || t.text == "False") e->lit = value::boolean(false);
      else if (t.text == "none" || t.text == "None") e->lit = value::none();
      else e->kind = expr_kind::name, e->name = t.text;
      next();
      return e;
    }
    case tok::string: {
      auto e = make_expr(expr_kind::literal, t.line);
      std::string s;
      while (cur().type == tok::string) s += cur().text, next();  // adjacent literals join
      e->lit = value::string(std::move(s));
      return e;
    }
    case tok::integer:
    case tok::floating: {
      auto e = make_expr(expr_kind::literal, t.line);
      e->lit = t.type == tok::integer ? value::integer(t.ival) : value::floating(t.fval);
      next();
      return e;
    }
    case tok::op:
      if (t.text == "(") {
        next();
        GLIA_ASSIGN(expr_ptr e, parse_tuple(false, true, {}, true));
        GLIA_TRY(expect_op(")"));
        return e;
      }
      if (t.text == "[") return parse_list();
      if (t.text == "{") return parse_dict();
      break;
    default: break;
  }
  return fail(t, "unexpected " + describe(t));
}

result<expr_ptr> parser::parse_list() {
  auto e = make_expr(expr_kind::list, cur().line);
  next();
  while (!is_op("]")) {
    if (!e->args.empty()) GLIA_TRY(expect_op(","));
    if (is_op("]")) break;
    GLIA_ASSIGN(expr_ptr item, parse_expression(true));
    e->args.push_back(std::move(item));
  }
  next();
  return e;
}

result<expr_ptr> parser::parse_dict() {
  auto e = make_expr(expr_kind::dict, cur().line);
  next();
  while (!is_op("}")) {
    if (!e->args.empty()) GLIA_TRY(expect_op(","));
    if (is_op("}")) break;
    GLIA_ASSIGN(expr_ptr k, parse_expression(true));
    GLIA_TRY(expect_op(":"));
    GLIA_ASSIGN(expr_ptr v, parse_expression(true));
    e->args.push_back(std::move(k));
    e->args.push_back(std::move(v));
  }
  next();
  return e;
}

result<expr_ptr> parser::parse_postfix(expr_ptr node) {
  for (;;) {
    if (is_op(".") || is_op("[")) {
      GLIA_ASSIGN(node, parse_subscript(std::move(node)));
    } else if (is_op("(")) {
      GLIA_ASSIGN(node, parse_call(std::move(node)));
    } else {
      return node;
    }
  }
}

result<expr_ptr> parser::parse_filter_expr(expr_ptr node) {
  for (;;) {
    if (is_op("|")) {
      GLIA_ASSIGN(node, parse_filters(std::move(node)));
    } else if (is_name("is")) {
      GLIA_ASSIGN(node, parse_test(std::move(node)));
    } else if (is_op("(")) {
      GLIA_ASSIGN(node, parse_call(std::move(node)));
    } else {
      return node;
    }
  }
}

result<expr_ptr> parser::parse_subscript(expr_ptr node) {
  const token t = cur();
  next();
  if (t.text == ".") {
    const token& a = cur();
    if (a.type == tok::name) {
      auto e = make_expr(expr_kind::getattr, t.line);
      e->name = a.text;
      e->args.push_back(std::move(node));
      next();
      return e;
    }
    if (a.type == tok::integer) {
      auto e = make_expr(expr_kind::getitem, t.line);
      e->args.push_back(std::move(node));
      auto idx = make_expr(expr_kind::literal, a.line);
      idx->lit = value::integer(a.ival);
      e->args.push_back(std::move(idx));
      next();
      return e;
    }
    return fail(a, "expected name or number");
  }
  // [ ... ]: an index, a slice, or a tuple of indexes.
  std::vector<subscript_part> parts;
  while (!is_op("]")) {
    if (!parts.empty()) GLIA_TRY(expect_op(","));
    if (is_op("]")) break;
    GLIA_ASSIGN(subscript_part part, parse_subscribed());
    parts.push_back(std::move(part));
  }
  GLIA_TRY(expect_op("]"));
  if (parts.empty()) return fail(cur(), "expected an index");
  if (parts.size() == 1 && parts[0].is_slice) {
    auto e = make_expr(expr_kind::slice, t.line);
    e->args.push_back(std::move(node));
    e->args.push_back(std::move(parts[0].start));
    e->args.push_back(std::move(parts[0].stop));
    e->args.push_back(std::move(parts[0].step));
    return e;
  }
  auto e = make_expr(expr_kind::getitem, t.line);
  e->args.push_back(std::move(node));
  if (parts.size() == 1) {
    e->args.push_back(std::move(parts[0].start));
    return e;
  }
  auto tup = make_expr(expr_kind::tuple, t.line);
  for (auto& p : parts) {
    if (p.is_slice) return make_error("line {}: unsupported: slices inside a tuple subscript", t.line);
    tup->args.push_back(std::move(p.start));
  }
  e->args.push_back(std::move(tup));
  return e;
}

result<parser::subscript_part> parser::parse_subscribed() {
  subscript_part p;
  if (!is_op(":")) {
    GLIA_ASSIGN(p.start, parse_expression(true));
    if (!is_op(":")) return p;
  }
  next();  // ':'
  p.is_slice = true;
  if (!is_op("]") && !is_op(",") && !is_op(":")) {
    GLIA_ASSIGN(p.stop, parse_expression(true));
  }
  if (skip_op(":") && !is_op("]") && !is_op(",")) {
    GLIA_ASSIGN(p.step, parse_expression(true));
  }
  return p;
}

result<expr_ptr> parser::parse_call(expr_ptr callee) {
  auto c = make_expr(expr_kind::call, cur().line);
  c->args.push_back(std::move(callee));
  GLIA_TRY(parse_call_args(*c));
  return c;
}

status parser::parse_call_args(expr& c) {
  GLIA_TRY(expect_op("("));
  bool need_comma = false;
  while (!is_op(")")) {
    if (need_comma) {
      GLIA_TRY(expect_op(","));
      if (is_op(")")) break;
    }
    if (skip_op("*")) {
      GLIA_ASSIGN(c.dyn_args, parse_expression(true));
    } else if (skip_op("**")) {
      GLIA_ASSIGN(c.dyn_kwargs, parse_expression(true));
    } else if (cur().type == tok::name && look().type == tok::op && look().text == "=") {
      std::string key = cur().text;
      next(), next();
      GLIA_ASSIGN(expr_ptr v, parse_expression(true));
      c.kwargs.emplace_back(std::move(key), std::move(v));
    } else {
      if (!c.kwargs.empty() || c.dyn_args || c.dyn_kwargs) return fail(cur(), "Invalid argument syntax");
      GLIA_ASSIGN(expr_ptr v, parse_expression(true));
      c.args.push_back(std::move(v));
    }
    need_comma = true;
    if (cur().type == tok::eof) return fail(cur(), "unexpected end of template");
  }
  next();
  return {};
}

result<std::string> parser::dotted_name() {
  GLIA_ASSIGN(std::string n, expect_name());
  while (is_op(".") && look().type == tok::name) {
    next();
    n += "." + cur().text;
    next();
  }
  return n;
}

// `| f | g(args)`; with start_inline the first `|` is absent ({% filter f %}).
result<expr_ptr> parser::parse_filters(expr_ptr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    auto f = make_expr(expr_kind::filter, cur().line);
    GLIA_ASSIGN(f->name, dotted_name());
    f->args.push_back(std::move(node));
    if (is_op("(")) GLIA_TRY(parse_call_args(*f));
    node = std::move(f);
  }
  return node;
}

result<expr_ptr> parser::parse_test(expr_ptr node) {
  const int line = cur().line;
  next();  // is
  const bool negated = skip_name("not");
  auto t = make_expr(expr_kind::test, line);
  GLIA_ASSIGN(t->name, dotted_name());
  t->args.push_back(std::move(node));
  const token& c = cur();
  if (is_op("(")) {
    GLIA_TRY(parse_call_args(*t));
  } else if ((c.type == tok::name || c.type == tok::string || c.type == tok::integer || c.type == tok::floating ||
              is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) return fail(c, "You cannot chain multiple tests with is");
    GLIA_ASSIGN(expr_ptr arg, parse_primary());
    GLIA_ASSIGN(arg, parse_postfix(std::move(arg)));
    t->args.push_back(std::move(arg));
  }
  if (!negated) return t;
  auto n = make_expr(expr_kind::op_not, line);
  n->args.push_back(std::move(t));
  return n;
}

}  // namespace glia::jinja::detail
