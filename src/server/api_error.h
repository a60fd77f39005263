// Errors a client sees: an HTTP status and the OpenAI error JSON shape
//   {"error": {"message", "type", "param", "code"}}
// so official clients raise their typed exceptions (BadRequestError, AuthenticationError, ...).
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "core/status.h"

namespace glia::server {

struct api_error {
  api_error() = default;
  // The message is made one line (control bytes escaped, core/status.h): it may quote the client.
  api_error(int s, std::string m, std::string p = {}) : status(s), message(one_line(std::move(m))), param(std::move(p)) {}
  int status = 400;
  std::string message;
  std::string param;  // the request field at fault, or empty
  // OpenAI's machine-readable error.code ("invalid_api_key", "context_length_exceeded"), or empty
  // for null; clients compare it as a string, never as the HTTP status.
  std::string code;
  std::string type() const;  // invalid_request_error, authentication_error, server_error, ...
  std::string to_json() const;
};

inline api_error bad_request(std::string message, std::string param = {}) {
  return api_error{400, std::move(message), std::move(param)};
}

// A value or the error to answer with (parsing and validation return these instead of throwing).
template <typename T>
class api_result {
 public:
  api_result(T v) : v_(std::move(v)) {}          // NOLINT: implicit by design
  api_result(api_error e) : v_(std::move(e)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const api_error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, api_error> v_;
};

}  // namespace glia::server
