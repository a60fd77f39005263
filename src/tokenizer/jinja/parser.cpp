// Statements: {% if %}, {% for %}, {% set %}, {% macro %}, ... and the parse entry point.
#include "tokenizer/jinja/parser.h"

#include "tokenizer/jinja/parser_impl.h"

namespace glia::jinja {
namespace detail {

// Parses until a block tag named in `ends` (left unconsumed) or the end of the template.
result<stmt_list> parser::subparse(std::initializer_list<std::string_view> ends) {
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
status parser::end_tag(std::string_view name) {
  if (cur().type != tok::block_begin || !(look().type == tok::name && look().text == name))
    return fail(cur(), "expected '" + std::string(name) + "'");
  next();
  next();
  return expect_block_end();
}

result<stmt_ptr> parser::parse_statement() {
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
    s->name = name;
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

result<stmt_ptr> parser::parse_if(int line) {
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

result<target> parser::parse_target(bool with_namespace, std::initializer_list<std::string_view> extra_end, int depth) {
  target tg;
  if (with_namespace && cur().type == tok::name && look().type == tok::op && look().text == "." &&
      look(2).type == tok::name) {
    tg.names.push_back(cur().text);
    tg.attr = look(2).text;
    next(), next(), next();
    return tg;
  }
  const bool paren = skip_op("(");
  std::vector<target> elems;
  bool nested = false;
  for (;;) {
    if (!elems.empty()) {
      if (!skip_op(",")) break;
      tg.tuple = true;
    }
    if (cur().type == tok::op && cur().text == "(") {
      // A parenthesized tuple inside the target: `for a, (b, c) in ...`.
      if (depth >= 16) return fail(cur(), "loop targets nest too deeply");
      GLIA_ASSIGN(target sub, parse_target(false, extra_end, depth + 1));
      tg.names.insert(tg.names.end(), sub.names.begin(), sub.names.end());
      elems.push_back(std::move(sub));
      nested = true;
      continue;
    }
    if (cur().type != tok::name) break;
    bool is_end = false;
    for (auto e : extra_end) is_end |= cur().text == e;
    if (is_end) break;
    tg.names.push_back(cur().text);
    target one;
    one.names.push_back(cur().text);
    elems.push_back(std::move(one));
    next();
  }
  if (nested) {
    tg.tuple = true;
    tg.nested = std::move(elems);
  }
  if (paren) {
    tg.tuple = true;
    GLIA_TRY(expect_op(")"));
  }
  if (tg.names.empty()) return fail(cur(), "can't assign to " + describe(cur()));
  return tg;
}

result<stmt_ptr> parser::parse_for(int line) {
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

result<stmt_ptr> parser::parse_set(int line) {
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

result<std::vector<std::pair<std::string, expr_ptr>>> parser::parse_signature() {
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

result<stmt_ptr> parser::parse_macro(int line) {
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

result<stmt_ptr> parser::parse_call_block(int line) {
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

result<stmt_ptr> parser::parse_filter_block(int line) {
  auto s = make_stmt(stmt_kind::filter_block, line);
  GLIA_ASSIGN(s->filter, parse_filters(nullptr, true));
  GLIA_TRY(expect_block_end());
  GLIA_ASSIGN(s->body, subparse({"endfilter"}));
  GLIA_TRY(end_tag("endfilter"));
  return s;
}

result<stmt_ptr> parser::parse_with(int line) {
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

}  // namespace detail

result<std::shared_ptr<const program>> parse(std::string_view source, int max_depth) {
  GLIA_ASSIGN(std::vector<token> toks, lex(source));
  detail::parser p(std::move(toks), max_depth);
  GLIA_ASSIGN(stmt_list body, p.parse_all());
  auto prog = std::make_shared<program>();
  prog->body = std::move(body);
  return std::shared_ptr<const program>(std::move(prog));
}

}  // namespace glia::jinja
