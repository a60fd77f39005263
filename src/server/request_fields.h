// Typed, range-checked reads of optional JSON fields for request parsing. JSON null counts as absent
// (OpenAI clients send null for unset options). Each returns an error naming the field on a wrong
// type or an out-of-range value, including integers too large for 64 bits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace glia::server {

using field_error = std::optional<api_error>;

// Returns the error of a field read that failed (from a function returning field_error or api_result).
#define GLIA_FIELD(expr)              \
  do {                                \
    if (auto e_ = (expr)) return *e_; \
  } while (0)

field_error read_int(const nlohmann::json& obj, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>& out);
field_error read_number(const nlohmann::json& obj, const char* key, double lo, double hi, std::optional<double>& out);
field_error read_bool(const nlohmann::json& obj, const char* key, std::optional<bool>& out);
field_error read_string(const nlohmann::json& obj, const char* key, std::optional<std::string>& out);

// Names of a JSON type for messages ("a string", "an integer", ...).
std::string json_type_name(const nlohmann::json& v);
inline std::string json_type_name(const nlohmann::ordered_json& v) { return json_type_name(nlohmann::json(v)); }

// An optional object member: `out` is null when absent or null; a 400 naming it when not an object.
field_error optional_object(const nlohmann::ordered_json& obj, const char* key, const nlohmann::ordered_json*& out);

// glia's sampling fields beyond an API's own (seed, min_p, penalties, logit_bias, grammars,
// chat_template_kwargs, ...), which the Messages and Responses APIs take as the chat endpoint reads
// them: llama-server's and vLLM's users send them to every endpoint.
bool is_sampling_extension(const std::string& field);
// Client text (a field name, a role) as it may appear in an error message: JSON-escaped, so control
// characters cannot break the message's single line, and cut to 64 characters.
std::string shown(std::string_view client_text);

}  // namespace glia::server
