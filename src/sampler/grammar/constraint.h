// The ways a user states what generated text must look like, compiled to one grammar: GBNF text
// (--grammar, the server's "grammar"), a JSON schema (--json-schema, "json_schema", OpenAI's
// response_format json_schema, vLLM's guided_json), any JSON object (response_format json_object),
// a regular expression (vLLM's guided_regex) or a list of choices (guided_choice).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "sampler/grammar/grammar.h"

namespace glia::grammar {

using compiled_ptr = std::shared_ptr<const compiled>;

result<compiled_ptr> from_gbnf(std::string_view gbnf);
// Properties are generated in the schema's order: parse it as ordered_json (nlohmann::json sorts
// object members).
result<compiled_ptr> from_json_schema(const nlohmann::ordered_json& schema);
// The schema as JSON text (a command line, a file, a request body's field); parse errors say where.
result<compiled_ptr> from_json_schema_text(std::string_view schema_text);
// The GBNF text a schema given as JSON text becomes (glia grammar prints it).
result<std::string> json_schema_text_to_gbnf(std::string_view schema_text);
// Any JSON object, as OpenAI's response_format {"type": "json_object"} promises.
result<compiled_ptr> json_object();
result<compiled_ptr> from_regex(std::string_view regex);
// Exactly one of the strings.
result<compiled_ptr> from_choices(const std::vector<std::string>& choices);

}  // namespace glia::grammar
