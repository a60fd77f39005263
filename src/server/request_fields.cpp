#include "server/request_fields.h"

#include <cmath>
#include <fmt/core.h>

#include <set>

#include "core/json_text.h"
#include "server/request_grammar.h"

namespace glia::server {
namespace {

const nlohmann::json* find(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

field_error optional_object(const nlohmann::ordered_json& obj, const char* key, const nlohmann::ordered_json*& out) {
  out = nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return bad_request(fmt::format("'{}' must be an object, got {}", key, json_type_name(*it)), key);
  out = &*it;
  return std::nullopt;
}

bool is_sampling_extension(const std::string& field) {
  static const std::set<std::string> fields = {"seed", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repeat_penalty",
                                               "repetition_penalty", "logit_bias", "ignore_eos", "chat_template_kwargs", "reasoning_format",
                                               "stop", "thinking_budget_tokens", "thinking_token_budget", "thinking_budget_message"};
  static const std::set<std::string> constraints(std::begin(output_constraint_fields), std::end(output_constraint_fields));
  return fields.contains(field) || constraints.contains(field);
}

std::string json_type_name(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

field_error read_int(const nlohmann::json& obj, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>& out) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  // Integral floats (e.g. 64.0) are accepted, as Python's json and JavaScript do not tell them apart.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d)
      return bad_request(fmt::format("'{}' must be an integer, got {}", key, v->dump()), key);
    // 2^63 itself does not fit in int64_t although it compares equal to double(INT64_MAX).
    if (d < double(lo) || d > double(hi) || d >= 9223372036854775808.0)
      return bad_request(fmt::format("'{}' is {}, outside [{}, {}]", key, v->dump(), lo, hi), key);
    out = int64_t(d);
    return std::nullopt;
  }
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > uint64_t(hi) || (lo > 0 && u < uint64_t(lo))) return bad_request(fmt::format("'{}' is {}, outside [{}, {}]", key, u, lo, hi), key);
    out = int64_t(u);
    return std::nullopt;
  }
  if (!v->is_number_integer())
    return bad_request(fmt::format("'{}' must be an integer, got {}", key, json_type_name(*v)), key);
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) return bad_request(fmt::format("'{}' is {}, outside [{}, {}]", key, i, lo, hi), key);
  out = i;
  return std::nullopt;
}

field_error read_number(const nlohmann::json& obj, const char* key, double lo, double hi, std::optional<double>& out) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) return bad_request(fmt::format("'{}' must be a number, got {}", key, json_type_name(*v)), key);
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    return bad_request(fmt::format("'{}' is {}, outside [{}, {}]", key, v->dump(), lo, hi), key);
  out = d;
  return std::nullopt;
}

field_error read_bool(const nlohmann::json& obj, const char* key, std::optional<bool>& out) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return bad_request(fmt::format("'{}' must be a boolean, got {}", key, json_type_name(*v)), key);
  out = v->get<bool>();
  return std::nullopt;
}

field_error read_string(const nlohmann::json& obj, const char* key, std::optional<std::string>& out) {
  const auto* v = find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) return bad_request(fmt::format("'{}' must be a string, got {}", key, json_type_name(*v)), key);
  out = v->get<std::string>();
  return std::nullopt;
}

std::string shown(std::string_view client_text) {
  constexpr size_t max_chars = 64;
  const bool cut = client_text.size() > max_chars;
  std::string text(client_text.substr(0, max_chars));
  std::string quoted = json_text(nlohmann::json(text));
  return quoted.substr(1, quoted.size() - 2) + (cut ? "..." : "");
}

}  // namespace glia::server
