// Statements, scopes, macros and the render entry points.
#include "tokenizer/jinja/interp.h"

#include <algorithm>

#include "tokenizer/jinja/parser.h"
#include "core/status.h"

namespace glia::jinja {

const value* scope::lookup(std::string_view name) const {
  for (const scope* s = this; s; s = s->parent.get())
    for (const auto& [n, v] : s->vars)
      if (n == name) return &v;
  return nullptr;
}

void scope::set(std::string_view name, value v) {
  for (auto& [n, old] : vars)
    if (n == name) {
      old = std::move(v);
      return;
    }
  vars.emplace_back(std::string(name), std::move(v));
}

interpreter::interpreter(std::shared_ptr<const program> prog, const render_options& opt)
    : prog_(std::move(prog)), opt_(opt) {}

status interpreter::tick(uint64_t steps) {
  steps_ += steps;
  if (steps_ > opt_.limits.max_steps)
    return make_error("LimitExceeded: the template ran more than {} steps", opt_.limits.max_steps);
  return {};
}

status interpreter::charge_bytes(size_t total, size_t added) {
  if (total > opt_.limits.max_output_bytes)
    return make_error("LimitExceeded: a string of {} bytes exceeds the limit of {} bytes", total,
                      opt_.limits.max_output_bytes);
  return tick(added / 16);
}

status interpreter::check_depth(const value& v) const {
  if (v.depth() > opt_.limits.max_value_depth)
    return make_error("LimitExceeded: lists/dicts nest deeper than {}", opt_.limits.max_value_depth);
  return {};
}

error interpreter::raise(std::string msg) {
  raised_ = one_line(std::move(msg));  // the template's own text: errors are one line
  return error{*raised_};
}

status interpreter::append(std::string& out, std::string_view text) {
  if (out.size() + text.size() > opt_.limits.max_output_bytes)
    return make_error("LimitExceeded: the output exceeds {} bytes", opt_.limits.max_output_bytes);
  GLIA_TRY(tick(text.size() / 16));
  out.append(text);
  return {};
}

result<std::string> interpreter::run(const scope_ptr& globals) {
  auto top = std::make_shared<scope>();
  top->parent = globals;
  std::string out;
  auto r = exec(prog_->body, top, out);
  top->vars.clear();  // values may refer back to this scope (loop closures); drop them now
  if (raised_) return error{*raised_};
  if (!r) return r.take_error();
  return out;
}

result<flow> interpreter::exec(const stmt_list& body, const scope_ptr& sc, std::string& out) {
  for (const auto& s : body) {
    GLIA_ASSIGN(flow f, exec_stmt(*s, sc, out));
    if (f != flow::normal) return f;
  }
  return flow::normal;
}

namespace {

// Whether a macro body mentions a name (Jinja only accepts extra arguments when the body reads
// `varargs`/`kwargs`, and passes `caller` only when it is used).
bool mentions(const expr* e, std::string_view name) {
  if (!e) return false;
  if (e->kind == expr_kind::name && e->name == name) return true;
  for (const auto& a : e->args)
    if (mentions(a.get(), name)) return true;
  for (const auto& [k, a] : e->kwargs)
    if (mentions(a.get(), name)) return true;
  return mentions(e->dyn_args.get(), name) || mentions(e->dyn_kwargs.get(), name);
}

// into_macros: also look inside macros defined in `body` (they close over its variables, e.g. a
// macro defined in a for loop sees `loop`).
bool mentions(const stmt_list& body, std::string_view name, bool into_macros = false) {
  for (const auto& s : body) {
    if (mentions(s->value_expr.get(), name) || mentions(s->cond.get(), name) || mentions(s->filter.get(), name))
      return true;
    for (const auto& [c, b] : s->branches)
      if (mentions(c.get(), name) || mentions(b, name, into_macros)) return true;
    for (const auto& [n, d] : s->params)
      if (mentions(d.get(), name)) return true;
    if ((into_macros || s->kind != stmt_kind::macro) &&
        (mentions(s->body, name, into_macros) || mentions(s->else_body, name, into_macros)))
      return true;
  }
  return false;
}

}  // namespace

bool holds_namespace(interpreter& in, const value& v, uint32_t budget) {
  if (budget == 0) return true;
  (void)in.tick();
  switch (v.type()) {
    case kind::names: return true;
    case kind::array:
      for (const value& x : v.arr().items)
        if ((x.is_array() || x.is_object() || x.is_namespace()) && holds_namespace(in, x, budget - 1)) return true;
      return false;
    case kind::object:
      for (const auto& [k, x] : v.obj().entries)
        if ((x.is_array() || x.is_object() || x.is_namespace()) && holds_namespace(in, x, budget - 1)) return true;
      return false;
    default: return false;
  }
}

error interpreter::locate(int line, const std::string& msg) const {
  if (msg.starts_with("line ") || raised_) return error{msg};
  return make_error("line {}: {}", line, msg);
}

result<flow> interpreter::exec_stmt(const stmt& s, const scope_ptr& sc, std::string& out) {
  nesting_guard g(*this);
  if (nesting_ > opt_.limits.max_nesting)
    return make_error("line {}: LimitExceeded: evaluation nests deeper than {}", s.line, opt_.limits.max_nesting);
  if (auto t = tick(); !t) return locate(s.line, t.message());
  auto r = exec_stmt_impl(s, sc, out);
  if (!r) return locate(s.line, r.message());
  return r;
}

result<flow> interpreter::exec_stmt_impl(const stmt& s, const scope_ptr& sc, std::string& out) {
  auto located = [&](const std::string& msg) -> error { return locate(s.line, msg); };
  switch (s.kind) {
    case stmt_kind::text:
      if (auto st = append(out, s.text); !st) return located(st.message());
      return flow::normal;
    case stmt_kind::output: {
      GLIA_ASSIGN(value v, eval(*s.value_expr, sc));
      if (auto st = append(out, v.is_string() ? v.str() : to_str(v)); !st) return located(st.message());
      return flow::normal;
    }
    case stmt_kind::if_:
      for (const auto& [cond, body] : s.branches) {
        GLIA_ASSIGN(value c, eval(*cond, sc));
        if (truthy(c)) return exec(body, sc, out);
      }
      return exec(s.else_body, sc, out);
    case stmt_kind::for_: return exec_for(s, sc, out);
    case stmt_kind::set: {
      GLIA_ASSIGN(value v, eval(*s.value_expr, sc));
      if (auto st = exec_set(s, sc, std::move(v)); !st) return located(st.message());
      return flow::normal;
    }
    case stmt_kind::set_block:
    case stmt_kind::filter_block: {
      // Jinja2 renders these bodies in an inner frame: a set inside does not leak out.
      auto body_scope = std::make_shared<scope>();
      body_scope->parent = sc;
      std::string inner;
      auto r = exec(s.body, body_scope, inner);
      body_scope->vars.clear();
      GLIA_TRY(r);
      value v = value::string(std::move(inner));
      if (s.filter) {
        GLIA_ASSIGN(v, eval_filter(*s.filter, sc, &v));
      }
      if (s.kind == stmt_kind::filter_block) {
        if (auto st = append(out, to_str(v)); !st) return located(st.message());
      } else if (auto st = exec_set(s, sc, std::move(v)); !st) {
        return located(st.message());
      }
      return flow::normal;
    }
    case stmt_kind::macro: sc->set(s.name, make_macro(s, sc, s.name)); return flow::normal;
    case stmt_kind::call_block: {
      // The call expression gets caller= a macro made of this block's body.
      const expr& c = *s.value_expr;
      GLIA_ASSIGN(value callee, eval(*c.args[0], sc));
      GLIA_ASSIGN(call_args args, eval_args(c, 1, sc));
      args.kw.emplace_back("caller", make_macro(s, sc, "caller"));
      auto r = call(callee, args);
      if (!r) return located(r.message());
      if (auto st = append(out, to_str(*r)); !st) return located(st.message());
      return flow::normal;
    }
    case stmt_kind::with: {
      auto inner = std::make_shared<scope>();
      inner->parent = sc;
      std::vector<value> vals;
      for (const auto& [n, e] : s.params) {
        GLIA_ASSIGN(value v, eval(*e, sc));
        vals.push_back(std::move(v));
      }
      for (size_t i = 0; i < vals.size(); ++i) inner->set(s.params[i].first, std::move(vals[i]));
      auto r = exec(s.body, inner, out);
      inner->vars.clear();
      return r;
    }
    case stmt_kind::scope_body: {
      // {% generation %} is a call block in transformers (its body is a function of its own) and
      // {% autoescape %} a scoped block: either way a set inside does not leak out.
      auto body_scope = std::make_shared<scope>();
      body_scope->parent = sc;
      auto r = exec(s.body, body_scope, out);
      body_scope->vars.clear();
      return r;
    }
    case stmt_kind::break_: return flow::brk;
    case stmt_kind::continue_: return flow::cont;
  }
  return flow::normal;
}

status interpreter::exec_set(const stmt& s, const scope_ptr& sc, value v) { return assign(s.tgt, sc, std::move(v), s.line); }

status interpreter::assign(const target& t, const scope_ptr& sc, value v, int line) {
  if (!t.attr.empty()) {
    const value* ns = sc->lookup(t.names[0]);
    if (!ns || !ns->is_namespace())
      return make_error("TemplateRuntimeError: cannot assign attribute on non-namespace object");
    if (holds_namespace(*this, v, opt_.limits.max_value_depth * 2))
      return make_error("line {}: unsupported: storing a namespace inside a namespace", line);
    object_data& attrs = ns->ns().attrs;
    attrs.set(value::string(t.attr), std::move(v));
    if (attrs.depth > opt_.limits.max_value_depth)
      return make_error("LimitExceeded: lists/dicts nest deeper than {}", opt_.limits.max_value_depth);
    return {};
  }
  if (!t.tuple) {
    sc->set(t.names[0], std::move(v));
    return {};
  }
  if (!t.nested.empty()) {
    GLIA_ASSIGN(std::vector<value> parts, unpack(v, t.nested.size()));
    for (size_t i = 0; i < parts.size(); ++i) GLIA_TRY(assign(t.nested[i], sc, std::move(parts[i]), line));
    return {};
  }
  GLIA_ASSIGN(std::vector<value> parts, unpack(v, t.names.size()));
  for (size_t i = 0; i < parts.size(); ++i) sc->set(t.names[i], std::move(parts[i]));
  return {};
}

result<flow> interpreter::exec_for(const stmt& s, const scope_ptr& sc, std::string& out) {
  GLIA_ASSIGN(value seq, eval(*s.value_expr, sc));
  GLIA_ASSIGN(std::vector<value> items, iterate(seq));
  GLIA_TRY(tick(items.size()));
  // The `if` filter runs before the loop: loop.length and loop.index count only kept items.
  if (s.cond) {
    std::vector<value> kept;
    for (auto& item : items) {
      auto probe = std::make_shared<scope>();
      probe->parent = sc;
      GLIA_TRY(assign(s.tgt, probe, item, s.line));
      GLIA_ASSIGN(value keep, eval(*s.cond, probe));
      if (truthy(keep)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const int64_t n = int64_t(items.size());
  // loop.cycle(...) and loop.changed(...) read the current index through this shared cell.
  auto index = std::make_shared<int64_t>(0);
  auto last_changed = std::make_shared<std::optional<value>>();
  const value cycle = value::callable("loop.cycle", [index](interpreter&, call_args& a) -> result<value> {
    if (a.pos.empty()) return make_error("TypeError: no items for cycling given");
    return a.pos[size_t(*index % int64_t(a.pos.size()))];
  });
  const value changed = value::callable("loop.changed", [last_changed](interpreter&, call_args& a) -> result<value> {
    value now = value::array(a.pos, seq_kind::tuple);
    if (*last_changed && equals(**last_changed, now)) return value::boolean(false);
    *last_changed = std::move(now);
    return value::boolean(true);
  });
  // The loop variable is built only for bodies that read it, macros defined there included (macros
  // defined elsewhere and called there cannot see it).
  auto known = uses_loop_.find(&s);
  if (known == uses_loop_.end()) known = uses_loop_.emplace(&s, mentions(s.body, "loop", true)).first;
  static const value keys[] = {value::string("index"),   value::string("index0"), value::string("revindex"),
                               value::string("revindex0"), value::string("first"), value::string("last"),
                               value::string("length"),  value::string("depth"),  value::string("depth0"),
                               value::string("previtem"), value::string("nextitem"), value::string("cycle"),
                               value::string("changed")};
  bool completed = false;
  for (int64_t i = 0; i < n; ++i) {
    GLIA_TRY(tick());
    *index = i;
    auto iter = std::make_shared<scope>();
    iter->parent = sc;
    GLIA_TRY(assign(s.tgt, iter, items[size_t(i)], s.line));
    if (known->second) {
      object_data loop;
      loop.entries.reserve(std::size(keys));
      const value vals[] = {value::integer(i + 1), value::integer(i), value::integer(n - i), value::integer(n - i - 1),
                            value::boolean(i == 0), value::boolean(i == n - 1), value::integer(n), value::integer(1),
                            value::integer(0),
                            i > 0 ? items[size_t(i - 1)] : value::undefined("there is no previous item"),
                            i + 1 < n ? items[size_t(i + 1)] : value::undefined("there is no next item"), cycle, changed};
      for (size_t k = 0; k < std::size(keys); ++k) loop.entries.emplace_back(keys[k], vals[k]);
      iter->set("loop", value::object(std::move(loop)));
    }
    auto f = exec(s.body, iter, out);
    iter->vars.clear();
    if (!f) return f.take_error();
    if (*f == flow::brk) break;
    if (*f == flow::normal) completed = true;
  }
  // Jinja2 clears its "no iteration" flag at the end of the body, so an else block also runs when
  // every iteration left through break or continue (not Python's for-else).
  if (!completed) {
    // The else block has a frame of its own too: a set inside does not leak out.
    auto else_scope = std::make_shared<scope>();
    else_scope->parent = sc;
    auto r = exec(s.else_body, else_scope, out);
    else_scope->vars.clear();
    return r;
  }
  return flow::normal;
}

value interpreter::make_macro(const stmt& def, const scope_ptr& closure, const std::string& name) {
  const bool varargs = mentions(def.body, "varargs");
  const bool kwargs = mentions(def.body, "kwargs");
  const bool caller = mentions(def.body, "caller");
  // A weak reference: the defining scope holds the macro, so a strong one would be a cycle.
  std::weak_ptr<scope> weak = closure;
  const stmt* d = &def;
  return value::callable(name, [d, weak, varargs, kwargs, caller](interpreter& in, call_args& a) -> result<value> {
    scope_ptr cl = weak.lock();
    if (!cl) return make_error("unsupported: calling macro '{}' after the block that defined it ended", d->name);
    return in.call_macro(*d, cl, a, varargs, kwargs, caller);
  });
}

result<value> interpreter::call_macro(const stmt& def, const scope_ptr& closure, call_args& args, bool uses_varargs,
                                      bool uses_kwargs, bool uses_caller) {
  const std::string& name = def.kind == stmt_kind::macro ? def.name : std::string("caller");
  if (call_depth_ >= opt_.limits.max_call_depth)
    return make_error("LimitExceeded: macro calls nest deeper than {} (infinite recursion?)", opt_.limits.max_call_depth);
  struct depth_guard {
    int& d;
    explicit depth_guard(int& x) : d(x) { ++d; }
    ~depth_guard() { --d; }
  } guard(call_depth_);

  auto sc = std::make_shared<scope>();
  sc->parent = closure;
  const size_t n_params = def.params.size();
  if (args.pos.size() > n_params && !uses_varargs)
    return make_error("TypeError: macro '{}' takes not more than {} argument(s)", name, n_params);
  std::vector<bool> given(n_params, false);
  for (size_t i = 0; i < std::min(n_params, args.pos.size()); ++i) {
    sc->set(def.params[i].first, args.pos[i]);
    given[i] = true;
  }
  object_data extra_kw;
  value caller_v;
  for (auto& [k, v] : args.kw) {
    // (k captured by name: clang 14, the fuzz build's compiler, cannot capture structured bindings)
    auto it = std::find_if(def.params.begin(), def.params.end(), [&key = k](const auto& p) { return p.first == key; });
    if (it != def.params.end()) {
      const size_t i = size_t(it - def.params.begin());
      if (given[i]) return make_error("TypeError: macro '{}' got multiple values for argument '{}'", name, k);
      sc->set(k, v);
      given[i] = true;
    } else if (k == "caller" && uses_caller) {
      caller_v = v;
    } else if (uses_kwargs) {
      extra_kw.set(value::string(k), v);
    } else {
      return make_error("TypeError: macro '{}' takes no keyword argument '{}'", name, k);
    }
  }
  for (size_t i = 0; i < n_params; ++i) {
    if (given[i]) continue;
    if (def.params[i].second) {
      GLIA_ASSIGN(value d, eval(*def.params[i].second, sc));
      sc->set(def.params[i].first, std::move(d));
    } else {
      sc->set(def.params[i].first, value::undefined(fmt::format("parameter '{}' was not provided", def.params[i].first)));
    }
  }
  if (uses_varargs) {
    std::vector<value> rest;
    for (size_t i = n_params; i < args.pos.size(); ++i) rest.push_back(args.pos[i]);
    sc->set("varargs", value::array(std::move(rest), seq_kind::tuple));
  }
  if (uses_kwargs) sc->set("kwargs", value::object(std::move(extra_kw)));
  if (uses_caller && !caller_v.is_undefined()) sc->set("caller", caller_v);
  std::string out;
  auto r = exec(def.body, sc, out);
  sc->vars.clear();
  if (!r) return r.take_error();
  return value::string(std::move(out));
}

result<value> interpreter::call(const value& callee, call_args& args) {
  if (callee.is_callable()) {
    GLIA_ASSIGN(value r, callee.fn().fn(*this, args));
    GLIA_TRY(check_depth(r));
    return r;
  }
  if (callee.is_undefined()) return undefined_error(callee);
  return make_error("TypeError: '{}' object is not callable", type_name(callee));
}

// --- entry points ---

result<compiled_template> compiled_template::compile(std::string_view source, const render_limits& limits) {
  if (source.size() > limits.max_template_bytes)
    return make_error("template of {} bytes exceeds the limit of {} bytes", source.size(), limits.max_template_bytes);
  GLIA_ASSIGN(auto prog, parse(source, limits.max_parse_depth));
  compiled_template t;
  t.prog_ = std::move(prog);
  return t;
}

result<std::string> compiled_template::render(const json& variables, const render_options& options) const {
  if (!variables.is_object()) return make_error("template variables must be a JSON object");
  auto globals = std::make_shared<scope>();
  install_globals(*globals);
  auto vars = std::make_shared<scope>();
  vars->parent = globals;
  for (const auto& [k, v] : variables.items()) {
    GLIA_ASSIGN(value x, from_json(v, options.limits.max_value_depth));
    vars->set(k, std::move(x));
  }
  interpreter in(prog_, options);
  return in.run(vars);
}

result<std::string> render(std::string_view source, const json& variables, const render_options& options) {
  GLIA_ASSIGN(compiled_template t, compiled_template::compile(source, options.limits));
  return t.render(variables, options);
}

}  // namespace glia::jinja
