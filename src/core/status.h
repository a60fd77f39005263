// Errors are values: every fallible function returns a status or a result<T> carrying a one-line
// message that names what was wrong, the value seen and the limit.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace glia {

struct error {
  std::string message;
};

// `message` with its control bytes written as \xNN, so that text quoted from a file or a request
// (a GGUF string value, a token, a header) cannot break a message into several lines.
std::string one_line(std::string message);

// Builds an error with fmt formatting: return make_error("tensor {}: offset {} past end {}", ...);
// always one line (one_line).
template <typename... Args>
error make_error(fmt::format_string<Args...> f, Args&&... args) {
  return error{one_line(fmt::format(f, std::forward<Args>(args)...))};
}

class [[nodiscard]] status {
 public:
  status() = default;
  status(error e) : error_(std::move(e.message)) {}  // NOLINT: implicit by design
  static status ok() { return {}; }
  bool is_ok() const { return !error_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const std::string& message() const {
    static const std::string empty;
    return error_ ? *error_ : empty;
  }

 private:
  std::optional<std::string> error_;
};

template <typename T>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  result(error e) : v_(std::move(e)) {}      // NOLINT
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const std::string& message() const { return std::get<1>(v_).message; }
  error take_error() const { return std::get<1>(v_); }
  status to_status() const { return is_ok() ? status{} : status{std::get<1>(v_)}; }

 private:
  std::variant<T, error> v_;
};

}  // namespace glia

// Propagates a failed status/result out of the enclosing function (which returns status or result).
#define GLIA_TRY(expr)                                          \
  do {                                                          \
    auto glia_try_s_ = (expr);                                  \
    if (!glia_try_s_.is_ok()) return ::glia::error{glia_try_s_.message()}; \
  } while (0)

// GLIA_TRY for results that carry a value: declares or assigns `lhs` from a result, returning its
// error from the enclosing function (which returns a status or a result) when it failed.
#define GLIA_CAT2_(a, b) a##b
#define GLIA_CAT_(a, b) GLIA_CAT2_(a, b)
#define GLIA_ASSIGN(lhs, expr)                                               \
  auto GLIA_CAT_(glia_res_, __LINE__) = (expr);                              \
  if (!GLIA_CAT_(glia_res_, __LINE__).is_ok())                               \
    return ::glia::error{GLIA_CAT_(glia_res_, __LINE__).message()};          \
  lhs = std::move(*GLIA_CAT_(glia_res_, __LINE__))
