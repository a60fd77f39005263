// Expression evaluation.
#include "tokenizer/jinja/interp.h"
#include "core/status.h"

namespace glia::jinja {

result<value> interpreter::eval(const expr& e, const scope_ptr& sc) {
  nesting_guard g(*this);
  if (nesting_ > opt_.limits.max_nesting)
    return make_error("line {}: LimitExceeded: evaluation nests deeper than {}", e.line, opt_.limits.max_nesting);
  if (auto t = tick(); !t) return locate(e.line, t.message());
  auto r = eval_impl(e, sc);
  if (!r) return locate(e.line, r.message());
  if (auto d = check_depth(*r); !d) return locate(e.line, d.message());
  return r;
}

result<call_args> interpreter::eval_args(const expr& e, size_t first, const scope_ptr& sc) {
  call_args a;
  for (size_t i = first; i < e.args.size(); ++i) {
    GLIA_ASSIGN(value v, eval(*e.args[i], sc));
    a.pos.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) {
    GLIA_ASSIGN(value v, eval(*x, sc));
    a.kw.emplace_back(k, std::move(v));
  }
  if (e.dyn_args) {
    GLIA_ASSIGN(value v, eval(*e.dyn_args, sc));
    GLIA_ASSIGN(std::vector<value> items, iterate(v));
    for (auto& x : items) a.pos.push_back(std::move(x));
  }
  if (e.dyn_kwargs) {
    GLIA_ASSIGN(value v, eval(*e.dyn_kwargs, sc));
    if (!v.is_object()) return make_error("TypeError: argument after ** must be a mapping, not {}", type_name(v));
    for (const auto& [k, x] : v.obj().entries) {
      if (!k.is_string()) return make_error("TypeError: keywords must be strings");
      a.kw.emplace_back(k.str(), x);
    }
  }
  return a;
}

result<value> interpreter::eval_call(const expr& e, const scope_ptr& sc) {
  GLIA_ASSIGN(value callee, eval(*e.args[0], sc));
  GLIA_ASSIGN(call_args args, eval_args(e, 1, sc));
  return call(callee, args);
}

// A filter node; inside {% filter %} and {% set x | f %} the innermost input is the rendered block.
result<value> interpreter::eval_filter(const expr& e, const scope_ptr& sc, const value* block_input) {
  value input;
  if (!e.args[0]) {
    input = *block_input;
  } else if (e.args[0]->kind == expr_kind::filter && block_input) {
    GLIA_ASSIGN(input, eval_filter(*e.args[0], sc, block_input));
  } else {
    GLIA_ASSIGN(input, eval(*e.args[0], sc));
  }
  GLIA_ASSIGN(call_args args, eval_args(e, 1, sc));
  return apply_filter(*this, e.name, input, args);
}

result<value> interpreter::eval_compare(const expr& e, const scope_ptr& sc) {
  GLIA_ASSIGN(value left, eval(*e.args[0], sc));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    GLIA_ASSIGN(value right, eval(*e.args[i + 1], sc));
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==" || op == "!=") {
      ok = equals(left, right) == (op == "==");
    } else if (op == "in" || op == "notin") {
      GLIA_ASSIGN(bool in, contains(right, left));
      ok = in == (op == "in");
    } else {
      GLIA_ASSIGN(ok, compare_op(op, left, right));
    }
    if (!ok) return value::boolean(false);
    left = std::move(right);
  }
  return value::boolean(true);
}

result<value> interpreter::eval_slice(const expr& e, const scope_ptr& sc) {
  GLIA_ASSIGN(value obj, eval(*e.args[0], sc));
  value parts[3] = {value::none(), value::none(), value::none()};
  for (int i = 0; i < 3; ++i)
    if (e.args[size_t(i) + 1]) {
      GLIA_ASSIGN(parts[i], eval(*e.args[size_t(i) + 1], sc));
    }
  return slice(*this, obj, parts[0], parts[1], parts[2]);
}

result<value> interpreter::eval_impl(const expr& e, const scope_ptr& sc) {
  switch (e.kind) {
    case expr_kind::literal: return e.lit;
    case expr_kind::name: {
      if (const value* v = sc->lookup(e.name)) return *v;
      return value::undefined(fmt::format("'{}' is undefined", e.name));
    }
    case expr_kind::list:
    case expr_kind::tuple: {
      std::vector<value> items;
      items.reserve(e.args.size());
      for (const auto& a : e.args) {
        GLIA_ASSIGN(value v, eval(*a, sc));
        items.push_back(std::move(v));
      }
      return value::array(std::move(items), e.kind == expr_kind::tuple ? seq_kind::tuple : seq_kind::list);
    }
    case expr_kind::dict: {
      object_data o;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        GLIA_ASSIGN(value k, eval(*e.args[i], sc));
        GLIA_ASSIGN(value v, eval(*e.args[i + 1], sc));
        if (!hashable(k)) return make_error("TypeError: unhashable type: '{}'", type_name(k));
        o.set(std::move(k), std::move(v));
      }
      return value::object(std::move(o));
    }
    case expr_kind::getattr: {
      GLIA_ASSIGN(value obj, eval(*e.args[0], sc));
      return get_attr(obj, e.name);
    }
    case expr_kind::getitem: {
      GLIA_ASSIGN(value obj, eval(*e.args[0], sc));
      GLIA_ASSIGN(value key, eval(*e.args[1], sc));
      return get_item(obj, key);
    }
    case expr_kind::slice: return eval_slice(e, sc);
    case expr_kind::call: return eval_call(e, sc);
    case expr_kind::filter: return eval_filter(e, sc, nullptr);
    case expr_kind::test: {
      GLIA_ASSIGN(value v, eval(*e.args[0], sc));
      GLIA_ASSIGN(call_args args, eval_args(e, 1, sc));
      GLIA_ASSIGN(bool r, apply_test(*this, e.name, v, args));
      return value::boolean(r);
    }
    case expr_kind::op_not: {
      GLIA_ASSIGN(value v, eval(*e.args[0], sc));
      return value::boolean(!truthy(v));
    }
    case expr_kind::neg: {
      GLIA_ASSIGN(value v, eval(*e.args[0], sc));
      return unary_minus(v);
    }
    case expr_kind::pos: {
      GLIA_ASSIGN(value v, eval(*e.args[0], sc));
      if (v.is_undefined()) return undefined_error(v);
      if (!v.is_number()) return make_error("TypeError: bad operand type for unary +: '{}'", type_name(v));
      return v.is_bool() ? value::integer(v.int_like()) : v;
    }
    case expr_kind::binary: {
      GLIA_ASSIGN(value a, eval(*e.args[0], sc));
      if (e.name == "and") {
        if (!truthy(a)) return a;
        return eval(*e.args[1], sc);
      }
      if (e.name == "or") {
        if (truthy(a)) return a;
        return eval(*e.args[1], sc);
      }
      GLIA_ASSIGN(value b, eval(*e.args[1], sc));
      return binary_op(*this, e.name, a, b);
    }
    case expr_kind::concat: {
      std::string s;
      for (const auto& a : e.args) {
        GLIA_ASSIGN(value v, eval(*a, sc));
        const std::string part = to_str(v);
        GLIA_TRY(charge_bytes(s.size() + part.size(), part.size()));
        s += part;
      }
      return value::string(std::move(s));
    }
    case expr_kind::compare: return eval_compare(e, sc);
    case expr_kind::cond: {
      GLIA_ASSIGN(value c, eval(*e.args[0], sc));
      if (truthy(c)) return eval(*e.args[1], sc);
      if (e.args[2]) return eval(*e.args[2], sc);
      return value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.", e.line));
    }
  }
  return make_error("unsupported expression");
}

}  // namespace glia::jinja
