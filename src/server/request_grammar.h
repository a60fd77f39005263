// The fields that constrain a response's text, as the servers users come from spell them:
// OpenAI's response_format (text, json_object, json_schema), llama-server's grammar and json_schema,
// vLLM's guided_json, guided_regex, guided_choice and guided_grammar (and its newer structured_outputs).
// At most one may constrain (response_format text and an empty grammar ask for nothing).
#pragma once

#include <nlohmann/json.hpp>

#include "sampler/params.h"
#include "server/request_fields.h"

namespace glia::server {

// The field names read here (for the list of known request fields).
extern const char* const output_constraint_fields[8];

// Sets s.grammar from whichever field is present; a 400 naming the field when its value is malformed
// or cannot be compiled (an unsupported schema keyword, a grammar error with its line and column).
// `body` is the request's text, `obj` its parse.
field_error read_output_constraint(const nlohmann::json& obj, std::string_view body, sampler_params& s);

}  // namespace glia::server
