// GLIA_TRY for results that carry a value: declares or assigns `lhs` from a result, returning its
// error from the enclosing function (which returns a status or a result) when it failed.
#pragma once

#define GLIA_JINJA_CAT2(a, b) a##b
#define GLIA_JINJA_CAT(a, b) GLIA_JINJA_CAT2(a, b)
#define GLIA_ASSIGN(lhs, expr)                                                       \
  auto GLIA_JINJA_CAT(glia_res_, __LINE__) = (expr);                                 \
  if (!GLIA_JINJA_CAT(glia_res_, __LINE__).is_ok())                                  \
    return ::glia::error{GLIA_JINJA_CAT(glia_res_, __LINE__).message()};             \
  lhs = std::move(*GLIA_JINJA_CAT(glia_res_, __LINE__))
