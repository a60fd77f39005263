#include "tokenizer/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/try.h"

namespace glia::jinja {
namespace {

expr_ptr make_expr(expr_kind k, int line) {
  auto e = std::make_unique<expr>();
  e->kind = k;
  e->line = line;
  return e;
}

stmt_ptr make_stmt(stmt_kind k, int line) {
  auto s = std::make_unique<stmt>();
  s->kind = k;
  s->line = line;
  return s;
}

std::string describe(const token& t) {
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

  // --- statements ---

  // Parses until a block tag named in `ends` (left unconsumed) or the end of the template.
  result<stmt_list> subparse(std::initializer_list<std::string_view> ends) {
    depth_guard g(*this);
    if (g.too_deep()) return too_deep();
    stmt_list body;
    for (;;) {
      const token& t = cur();
      if (t.type == tok::eof) {
        if (ends.size() == 0) return body;
        return fail(t, "unexpected end of template, expected '" + std::string(*ends.begin()) + "'");
      }
      if (t.type == tok::text) {
        auto s = make_stmt(stmt_kind::text, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == tok::var_begin) {
        auto s = make_stmt(stmt_kind::output, t.line);
        next();
        GLIA_ASSIGN(s->value_expr, parse_tuple(false, true, {}, false));
        if (cur().type != tok::var_end) return fail(cur(), "expected end of print statement, got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == tok::block_begin) {
        const token& name = look();
        if (name.type == tok::name && std::find(ends.begin(), ends.end(), name.text) != ends.end()) return body;
        next();
        GLIA_ASSIGN(stmt_ptr s, parse_statement());
        if (s) body.push_back(std::move(s));
      } else {
        return fail(t, "unexpected " + describe(t));
      }
    }
  }

  // After `{%` of a closing tag: consumes `{% name %}`.
  status end_tag(std::string_view name) {
    if (cur().type != tok::block_begin || !(look().type == tok::name && look().text == name))
      return fail(cur(), "expected '" + std::string(name) + "'");
    next();
    next();
    return expect_block_end();
  }

  result<stmt_ptr> parse_statement() {
    const token& t = cur();
    if (t.type != tok::name) return fail(t, "tag name expected");
    const std::string name = t.text;
    const int line = t.line;
    next();
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "macro") return parse_macro(line);
    if (name == "call") return parse_call_block(line);
    if (name == "filter") return parse_filter_block(line);
    if (name == "with") return parse_with(line);
    if (name == "generation" || name == "autoescape") {
      auto s = make_stmt(stmt_kind::scope_body, line);
      if (name == "autoescape") {
        GLIA_ASSIGN(expr_ptr ignored, parse_expression(true));
        (void)ignored;
      }
      GLIA_TRY(expect_block_end());
      const std::string end = "end" + name;
      GLIA_ASSIGN(s->body, subparse({end}));
      GLIA_TRY(end_tag(end));
      return s;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) return fail(t_[i_ - 1], "'" + name + "' outside of a loop");
      GLIA_TRY(expect_block_end());
      return make_stmt(name == "break" ? stmt_kind::break_ : stmt_kind::continue_, line);
    }
    static constexpr std::string_view loader_tags[] = {"extends", "block", "include", "import", "from"};
    for (auto lt : loader_tags)
      if (name == lt) return make_error("line {}: unsupported statement '{}' (templates are rendered without a loader)", line, name);
    return make_error("line {}: TemplateSyntaxError: Encountered unknown tag '{}'.", line, name);
  }

  result<stmt_ptr> parse_if(int line) {
    auto s = make_stmt(stmt_kind::if_, line);
    for (;;) {
      GLIA_ASSIGN(expr_ptr cond, parse_tuple(false, true, {}, false));
      GLIA_TRY(expect_block_end());
      GLIA_ASSIGN(stmt_list body, subparse({"elif", "else", "endif"}));
      s->branches.emplace_back(std::move(cond), std::move(body));
      next();  // block_begin
      const std::string tag = cur().text;
      next();
      if (tag == "elif") continue;
      if (tag == "else") {
        GLIA_TRY(expect_block_end());
        GLIA_ASSIGN(s->else_body, subparse({"endif"}));
        GLIA_TRY(end_tag("endif"));
      } else {
        GLIA_TRY(expect_block_end());
      }
      return s;
    }
  }

  result<target> parse_target(bool with_namespace, std::initializer_list<std::string_view> extra_end) {
    target tg;
    if (with_namespace && cur().type == tok::name && look().type == tok::op && look().text == "." &&
        look(2).type == tok::name) {
      tg.names.push_back(cur().text);
      tg.attr = look(2).text;
      next(), next(), next();
      return tg;
    }
    const bool paren = skip_op("(");
    for (;;) {
      if (!tg.names.empty()) {
        if (!skip_op(",")) break;
        tg.tuple = true;
      }
      if (cur().type != tok::name) break;
      bool is_end = false;
      for (auto e : extra_end) is_end |= cur().text == e;
      if (is_end) break;
      tg.names.push_back(cur().text);
      next();
    }
    if (paren) {
      tg.tuple = true;
      GLIA_TRY(expect_op(")"));
    }
    if (tg.names.empty()) return fail(cur(), "can't assign to " + describe(cur()));
    return tg;
  }

  result<stmt_ptr> parse_for(int line) {
    auto s = make_stmt(stmt_kind::for_, line);
    GLIA_ASSIGN(s->tgt, parse_target(false, {"in"}));
    if (!skip_name("in")) return fail(cur(), "expected 'in', got " + describe(cur()));
    GLIA_ASSIGN(s->value_expr, parse_tuple(false, false, {"recursive"}, false));
    if (skip_name("if")) {
      GLIA_ASSIGN(s->cond, parse_expression(true));
    }
    if (is_name("recursive")) return make_error("line {}: unsupported: recursive for loops", line);
    GLIA_TRY(expect_block_end());
    ++loop_depth_;
    auto body = subparse({"endfor", "else"});
    --loop_depth_;
    if (!body) return body.take_error();
    s->body = std::move(*body);
    next();
    const std::string tag = cur().text;
    next();
    GLIA_TRY(expect_block_end());
    if (tag == "else") {
      GLIA_ASSIGN(s->else_body, subparse({"endfor"}));
      GLIA_TRY(end_tag("endfor"));
    }
    return s;
  }

  result<stmt_ptr> parse_set(int line) {
    GLIA_ASSIGN(target tg, parse_target(true, {}));
    if (skip_op("=")) {
      auto s = make_stmt(stmt_kind::set, line);
      s->tgt = std::move(tg);
      GLIA_ASSIGN(s->value_expr, parse_tuple(false, true, {}, false));
      GLIA_TRY(expect_block_end());
      return s;
    }
    auto s = make_stmt(stmt_kind::set_block, line);
    s->tgt = std::move(tg);
    if (is_op("|")) {
      GLIA_ASSIGN(s->filter, parse_filters(nullptr));
    }
    GLIA_TRY(expect_block_end());
    GLIA_ASSIGN(s->body, subparse({"endset"}));
    GLIA_TRY(end_tag("endset"));
    return s;
  }

  result<std::vector<std::pair<std::string, expr_ptr>>> parse_signature() {
    std::vector<std::pair<std::string, expr_ptr>> params;
    GLIA_TRY(expect_op("("));
    while (!is_op(")")) {
      if (!params.empty()) GLIA_TRY(expect_op(","));
      GLIA_ASSIGN(std::string name, expect_name());
      expr_ptr def;
      if (skip_op("=")) {
        GLIA_ASSIGN(def, parse_expression(true));
      }
      params.emplace_back(std::move(name), std::move(def));
    }
    next();
    return params;
  }

  result<stmt_ptr> parse_macro(int line) {
    auto s = make_stmt(stmt_kind::macro, line);
    GLIA_ASSIGN(s->name, expect_name());
    GLIA_ASSIGN(s->params, parse_signature());
    GLIA_TRY(expect_block_end());
    const int saved = loop_depth_;
    loop_depth_ = 0;
    auto body = subparse({"endmacro"});
    loop_depth_ = saved;
    if (!body) return body.take_error();
    s->body = std::move(*body);
    next();
    next();
    if (cur().type == tok::name) next();  // {% endmacro name %}
    GLIA_TRY(expect_block_end());
    return s;
  }

  result<stmt_ptr> parse_call_block(int line) {
    auto s = make_stmt(stmt_kind::call_block, line);
    if (is_op("(")) {
      GLIA_ASSIGN(s->params, parse_signature());
    }
    GLIA_ASSIGN(s->value_expr, parse_expression(true));
    if (s->value_expr->kind != expr_kind::call) return fail(cur(), "expected call");
    GLIA_TRY(expect_block_end());
    GLIA_ASSIGN(s->body, subparse({"endcall"}));
    GLIA_TRY(end_tag("endcall"));
    return s;
  }

  result<stmt_ptr> parse_filter_block(int line) {
    auto s = make_stmt(stmt_kind::filter_block, line);
    GLIA_ASSIGN(s->filter, parse_filters(nullptr, true));
    GLIA_TRY(expect_block_end());
    GLIA_ASSIGN(s->body, subparse({"endfilter"}));
    GLIA_TRY(end_tag("endfilter"));
    return s;
  }

  result<stmt_ptr> parse_with(int line) {
    auto s = make_stmt(stmt_kind::with, line);
    while (cur().type != tok::block_end) {
      if (!s->params.empty()) GLIA_TRY(expect_op(","));
      GLIA_ASSIGN(std::string name, expect_name());
      GLIA_TRY(expect_op("="));
      GLIA_ASSIGN(expr_ptr v, parse_expression(true));
      s->params.emplace_back(std::move(name), std::move(v));
    }
    next();
    GLIA_ASSIGN(s->body, subparse({"endwith"}));
    GLIA_TRY(end_tag("endwith"));
    return s;
  }

  // --- expressions ---

  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
    if (cur().type == tok::var_end || cur().type == tok::block_end || cur().type == tok::eof || is_op(")"))
      return true;
    for (auto e : extra_end)
      if (is_name(e)) return true;
    return false;
  }

  result<expr_ptr> parse_tuple(bool simplified, bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                               bool explicit_parens) {
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

  result<expr_ptr> parse_expression(bool with_condexpr) {
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

  expr_ptr binary(std::string op, expr_ptr l, expr_ptr r, int line) {
    auto b = make_expr(expr_kind::binary, line);
    b->name = std::move(op);
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  result<expr_ptr> parse_or() {
    GLIA_ASSIGN(expr_ptr l, parse_and());
    while (is_name("or")) {
      const int line = cur().line;
      next();
      GLIA_ASSIGN(expr_ptr r, parse_and());
      l = binary("or", std::move(l), std::move(r), line);
    }
    return l;
  }

  result<expr_ptr> parse_and() {
    GLIA_ASSIGN(expr_ptr l, parse_not());
    while (is_name("and")) {
      const int line = cur().line;
      next();
      GLIA_ASSIGN(expr_ptr r, parse_not());
      l = binary("and", std::move(l), std::move(r), line);
    }
    return l;
  }

  result<expr_ptr> parse_not() {
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

  result<expr_ptr> parse_compare() {
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

  result<expr_ptr> parse_math1() {
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

  result<expr_ptr> parse_concat() {
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

  result<expr_ptr> parse_math2() {
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

  result<expr_ptr> parse_pow() {
    GLIA_ASSIGN(expr_ptr l, parse_unary(true));
    while (is_op("**")) {
      const int line = cur().line;
      next();
      GLIA_ASSIGN(expr_ptr r, parse_unary(true));
      l = binary("**", std::move(l), std::move(r), line);
    }
    return l;
  }

  result<expr_ptr> parse_unary(bool with_filter) {
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

  result<expr_ptr> parse_primary() {
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

  result<expr_ptr> parse_list() {
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

  result<expr_ptr> parse_dict() {
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

  result<expr_ptr> parse_postfix(expr_ptr node) {
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

  result<expr_ptr> parse_filter_expr(expr_ptr node) {
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

  result<expr_ptr> parse_subscript(expr_ptr node) {
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

  // One subscript: an expression (kept in `start`), or start:stop:step.
  struct subscript_part {
    bool is_slice = false;
    expr_ptr start, stop, step;
  };

  result<subscript_part> parse_subscribed() {
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

  result<expr_ptr> parse_call(expr_ptr callee) {
    auto c = make_expr(expr_kind::call, cur().line);
    c->args.push_back(std::move(callee));
    GLIA_TRY(parse_call_args(*c));
    return c;
  }

  status parse_call_args(expr& c) {
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

  result<std::string> dotted_name() {
    GLIA_ASSIGN(std::string n, expect_name());
    while (is_op(".") && look().type == tok::name) {
      next();
      n += "." + cur().text;
      next();
    }
    return n;
  }

  // `| f | g(args)`; with start_inline the first `|` is absent ({% filter f %}).
  result<expr_ptr> parse_filters(expr_ptr node, bool start_inline = false) {
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

  result<expr_ptr> parse_test(expr_ptr node) {
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
};

}  // namespace

result<std::shared_ptr<const program>> parse(std::string_view source, int max_depth) {
  GLIA_ASSIGN(std::vector<token> toks, lex(source));
  parser p(std::move(toks), max_depth);
  GLIA_ASSIGN(stmt_list body, p.parse_all());
  auto prog = std::make_shared<program>();
  prog->body = std::move(body);
  return std::shared_ptr<const program>(std::move(prog));
}

}  // namespace glia::jinja
