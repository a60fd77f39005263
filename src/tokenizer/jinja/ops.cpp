// Python's operators on template values: arithmetic with int/float promotion and Python's floor
// division and modulo, sequence concatenation and repetition, comparisons, `in`, slicing.
#include <cmath>
#include <limits>

#include "tokenizer/jinja/interp.h"
#include "core/status.h"
#include "tokenizer/jinja/ustr.h"

namespace glia::jinja {

error undefined_error(const value& u) {
  const undefined_info* info = u.undef();
  if (!info) return make_error("UndefinedError: undefined value");
  return make_error("{}: {}", info->security ? "SecurityError" : "UndefinedError", info->message);
}

namespace {

error overflow() { return make_error("OverflowError: integer result does not fit in 64 bits"); }

error unsupported(std::string_view op, const value& a, const value& b) {
  return make_error("TypeError: unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a), type_name(b));
}

result<value> int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) return make_error("ZeroDivisionError: 0.0 cannot be raised to a negative power");
    return value::floating(std::pow(double(base), double(exp)));
  }
  int64_t r = 1;
  while (exp > 0) {
    if (exp & 1)
      if (__builtin_mul_overflow(r, base, &r)) return overflow();
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
  }
  return value::integer(r);
}

result<value> int_arith(std::string_view op, int64_t a, int64_t b) {
  int64_t r;
  if (op == "+") {
    if (__builtin_add_overflow(a, b, &r)) return overflow();
    return value::integer(r);
  }
  if (op == "-") {
    if (__builtin_sub_overflow(a, b, &r)) return overflow();
    return value::integer(r);
  }
  if (op == "*") {
    if (__builtin_mul_overflow(a, b, &r)) return overflow();
    return value::integer(r);
  }
  if (op == "/") {
    if (b == 0) return make_error("ZeroDivisionError: division by zero");
    return value::floating(double(a) / double(b));
  }
  if (op == "//" || op == "%") {
    if (b == 0) return make_error("ZeroDivisionError: {}", op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
    if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      if (op == "%") return value::integer(0);
      return overflow();
    }
    int64_t q = a / b, m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) --q, m += b;
    return value::integer(op == "//" ? q : m);
  }
  return int_pow(a, b);
}

result<value> float_arith(std::string_view op, double a, double b) {
  if (op == "+") return value::floating(a + b);
  if (op == "-") return value::floating(a - b);
  if (op == "*") return value::floating(a * b);
  if (op == "/") {
    if (b == 0) return make_error("ZeroDivisionError: float division by zero");
    return value::floating(a / b);
  }
  if (op == "//" || op == "%") {
    if (b == 0) return make_error("ZeroDivisionError: float {} by zero", op == "%" ? "modulo" : "floor division");
    // CPython's float_divmod.
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0) {
      if ((b < 0) != (mod < 0)) mod += b, div -= 1.0;
    } else {
      mod = std::copysign(0.0, b);
    }
    double floordiv;
    if (div != 0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, a / b);
    }
    return value::floating(op == "%" ? mod : floordiv);
  }
  if (a == 0 && b < 0) return make_error("ZeroDivisionError: 0.0 cannot be raised to a negative power");
  if (a < 0 && b != std::floor(b)) return make_error("unsupported: a negative number raised to a fractional power (complex result)");
  const double r = std::pow(a, b);
  // CPython's float_pow reports a finite base and exponent overflowing as ERANGE.
  if (std::isinf(r) && std::isfinite(a) && std::isfinite(b))
    return make_error("OverflowError: (34, 'Numerical result out of range')");
  return value::floating(r);
}

result<value> repeat(interpreter& in, const value& seq, int64_t n) {
  if (n <= 0) {
    if (seq.is_string()) return value::string("");
    return value::array({}, seq.arr().kind);
  }
  if (seq.is_string()) {
    const size_t len = seq.str().size();
    if (len != 0 && uint64_t(n) > in.options().limits.max_output_bytes / len + 1)
      return make_error("LimitExceeded: a string of {} x {} bytes exceeds the limit of {} bytes", n, len,
                        in.options().limits.max_output_bytes);
    GLIA_TRY(in.charge_bytes(len * size_t(n)));
    std::string out;
    out.reserve(len * size_t(n));
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return value::string(std::move(out));
  }
  const auto& items = seq.arr().items;
  if (!items.empty() && uint64_t(n) > in.options().limits.max_steps / items.size() + 1)
    return make_error("LimitExceeded: a list of {} x {} items is too long", n, items.size());
  GLIA_TRY(in.tick(items.size() * uint64_t(n)));
  std::vector<value> out;
  out.reserve(items.size() * size_t(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return value::array(std::move(out), seq.arr().kind);
}

// A list or tuple (a generator has no length to concatenate or repeat with).
bool is_materialized_array(const value& v) { return v.is_array() && v.arr().kind != seq_kind::generator; }

}  // namespace

result<value> binary_op(interpreter& in, std::string_view op, const value& a, const value& b) {
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float() || op == "/") {
      if (op == "/" && !a.is_float() && !b.is_float()) return int_arith(op, a.int_like(), b.int_like());
      return float_arith(op, a.number(), b.number());
    }
    return int_arith(op, a.int_like(), b.int_like());
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      GLIA_TRY(in.charge_bytes(a.str().size() + b.str().size()));
      return value::string(a.str() + b.str());
    }
    if (is_materialized_array(a) && is_materialized_array(b) && a.arr().kind == b.arr().kind) {
      GLIA_TRY(in.tick(a.arr().items.size() + b.arr().items.size()));
      std::vector<value> items = a.arr().items;
      items.insert(items.end(), b.arr().items.begin(), b.arr().items.end());
      return value::array(std::move(items), a.arr().kind);
    }
    if (a.is_string() || is_materialized_array(a))
      return make_error("TypeError: can only concatenate {} (not \"{}\") to {}", type_name(a), type_name(b), type_name(a));
    return unsupported(op, a, b);
  }
  if (op == "*") {
    if ((a.is_string() || is_materialized_array(a)) && (b.is_int() || b.is_bool())) return repeat(in, a, b.int_like());
    if ((b.is_string() || is_materialized_array(b)) && (a.is_int() || a.is_bool())) return repeat(in, b, a.int_like());
    if (a.is_string() || is_materialized_array(a) || b.is_string() || is_materialized_array(b))
      return make_error("TypeError: can't multiply sequence by non-int of type '{}'",
                        type_name(a.is_string() || is_materialized_array(a) ? b : a));
    return unsupported(op, a, b);
  }
  if (op == "%" && a.is_string()) {
    GLIA_ASSIGN(std::string s, percent_format(a.str(), b));
    GLIA_TRY(in.charge_bytes(s.size()));
    return value::string(std::move(s));
  }
  return unsupported(op == "**" ? "** or pow()" : op, a, b);
}

result<value> unary_minus(const value& v) {
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_float()) return value::floating(-v.as_float());
  if (v.is_int() || v.is_bool()) {
    if (v.int_like() == std::numeric_limits<int64_t>::min()) return overflow();
    return value::integer(-v.int_like());
  }
  return make_error("TypeError: bad operand type for unary -: '{}'", type_name(v));
}

result<bool> compare_op(std::string_view op, const value& a, const value& b) {
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  auto apply = [&](auto x, auto y) {
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    return x >= y;
  };
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return apply(a.number(), b.number());
    return apply(a.int_like(), b.int_like());
  }
  if (a.is_string() && b.is_string()) return apply(a.str().compare(b.str()), 0);
  if (is_materialized_array(a) && is_materialized_array(b) && a.arr().kind == b.arr().kind) {
    // Python: the first differing items decide; otherwise the lengths do.
    const auto &x = a.arr().items, &y = b.arr().items;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
      if (!equals(x[i], y[i])) return compare_op(op, x[i], y[i]);
    return apply(x.size(), y.size());
  }
  return make_error("TypeError: '{}' not supported between instances of '{}' and '{}'", op, type_name(a), type_name(b));
}

result<bool> contains(const value& container, const value& item) {
  switch (container.type()) {
    case kind::undefined: return false;
    case kind::string:
      if (!item.is_string())
        return make_error("TypeError: 'in <string>' requires string as left operand, not {}", type_name(item));
      return container.str().find(item.str()) != std::string::npos;
    case kind::array:
      for (const value& x : container.arr().items)
        if (equals(x, item)) return true;
      return false;
    case kind::object:
      if (!hashable(item)) return make_error("TypeError: unhashable type: '{}'", type_name(item));
      return container.obj().find(item) != nullptr;
    default: return make_error("TypeError: argument of type '{}' is not iterable", type_name(container));
  }
}

result<value> slice(interpreter& in, const value& v, const value& start, const value& stop, const value& step) {
  if (v.is_undefined()) return undefined_error(v);
  const bool str = v.is_string();
  // Jinja2 compiles x[a:b] to Python's own slicing (not environment.getitem), so a value that
  // cannot be sliced raises instead of giving Undefined.
  if (!str && !is_materialized_array(v)) {
    if (v.is_object()) return make_error("TypeError: unhashable type: 'slice'");
    return make_error("TypeError: '{}' object is not subscriptable", type_name(v));
  }
  for (const value* p : {&start, &stop, &step})
    if (!p->is_none() && !p->is_int() && !p->is_bool())
      return make_error("TypeError: slice indices must be integers or None or have an __index__ method");
  const int64_t st = step.is_none() ? 1 : step.int_like();
  if (st == 0) return make_error("ValueError: slice step cannot be zero");
  std::vector<size_t> bounds;
  if (str) bounds = ustr::boundaries(v.str());
  const int64_t len = str ? int64_t(bounds.size()) - 1 : int64_t(v.arr().items.size());
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](const value& x, int64_t dflt) {
    if (x.is_none()) return dflt;
    int64_t i = x.int_like();
    if (i < 0) {
      i += len;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= len) {
      i = st < 0 ? len - 1 : len;
    }
    return i;
  };
  const int64_t lo = adjust(start, st < 0 ? len - 1 : 0);
  const int64_t hi = adjust(stop, st < 0 ? -1 : len);
  std::vector<int64_t> idx;
  if (st > 0)
    for (int64_t i = lo; i < hi; i += st) idx.push_back(i);
  else
    for (int64_t i = lo; i > hi; i += st) idx.push_back(i);
  GLIA_TRY(in.tick(idx.size()));
  if (str) {
    const std::string& s = v.str();
    std::string out;
    for (int64_t i : idx) out.append(s, bounds[size_t(i)], bounds[size_t(i) + 1] - bounds[size_t(i)]);
    return value::string(std::move(out));
  }
  std::vector<value> out;
  out.reserve(idx.size());
  for (int64_t i : idx) out.push_back(v.arr().items[size_t(i)]);
  return value::array(std::move(out), v.arr().kind);
}

result<std::vector<value>> unpack(const value& v, size_t n) {
  if (!v.is_array() && !v.is_string() && !v.is_object() && !v.is_undefined())
    return make_error("TypeError: cannot unpack non-iterable {} object", type_name(v));
  GLIA_ASSIGN(std::vector<value> items, iterate(v));
  if (items.size() < n)
    return make_error("ValueError: not enough values to unpack (expected {}, got {})", n, items.size());
  if (items.size() > n) return make_error("ValueError: too many values to unpack (expected {})", n);
  return items;
}

}  // namespace glia::jinja
