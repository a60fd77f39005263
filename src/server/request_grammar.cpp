#include "server/request_grammar.h"

#include <fmt/core.h>

#include "sampler/grammar/constraint.h"

namespace glia::server {

using nlohmann::json;

const char* const output_constraint_fields[7] = {"response_format", "grammar",       "json_schema",   "guided_json",
                                                 "guided_regex",    "guided_choice", "guided_grammar"};

namespace {

field_error compiled_or_error(result<grammar::compiled_ptr> g, const char* field, grammar::compiled_ptr& out) {
  if (!g) return bad_request(fmt::format("'{}': {}", field, g.message()), field);
  out = *g;
  return std::nullopt;
}

// A schema given as an object, or as JSON text (vLLM accepts both for guided_json). `ordered` is the
// same value with its members in the order the client wrote them (json sorts them), which is the
// order the properties are generated in.
field_error schema_field(const json& v, const nlohmann::ordered_json& ordered, const char* field, grammar::compiled_ptr& out) {
  if (v.is_string()) return compiled_or_error(grammar::from_json_schema_text(v.get<std::string>()), field, out);
  if (v.is_object() || v.is_boolean()) return compiled_or_error(grammar::from_json_schema(ordered), field, out);
  return bad_request(fmt::format("'{}' must be a JSON schema (an object), got {}", field, json_type_name(v)), field);
}

field_error string_field(const json& v, const char* field, std::string& out) {
  if (!v.is_string()) return bad_request(fmt::format("'{}' must be a string, got {}", field, json_type_name(v)), field);
  out = v.get<std::string>();
  return std::nullopt;
}

field_error response_format(const json& v, const nlohmann::ordered_json& ordered, grammar::compiled_ptr& out) {
  constexpr const char* field = "response_format";
  if (!v.is_object()) return bad_request(fmt::format("'response_format' must be an object, got {}", json_type_name(v)), field);
  const json type = v.value("type", json());
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    // llama-server also takes a schema here.
    if (auto s = v.find("schema"); s != v.end() && !s->is_null()) return schema_field(*s, ordered.value("schema", nlohmann::ordered_json()), field, out);
    return compiled_or_error(grammar::json_object(), field, out);
  }
  if (type == "json_schema") {
    auto js = v.find("json_schema");
    if (js == v.end() || !js->is_object())
      return bad_request("'response_format' of type json_schema needs a 'json_schema' object holding the 'schema'", field);
    auto s = js->find("schema");
    if (s == js->end() || s->is_null())
      return bad_request("'response_format.json_schema' has no 'schema'", field);
    return schema_field(*s, ordered.value("json_schema", nlohmann::ordered_json::object()).value("schema", nlohmann::ordered_json()), field, out);
  }
  return bad_request(fmt::format("'response_format' type must be \"text\", \"json_object\" or \"json_schema\", got {}",
                                 type.is_null() ? std::string("none") : type.dump()),
                     field);
}

}  // namespace

field_error read_output_constraint(const json& obj, std::string_view body, sampler_params& s) {
  const char* given = nullptr;
  for (const char* f : output_constraint_fields) {
    auto it = obj.find(f);
    if (it == obj.end() || it->is_null()) continue;
    if (given) return bad_request(fmt::format("give one of '{}' and '{}': both constrain the output", given, f), f);
    given = f;
  }
  if (!given) return std::nullopt;
  const json& v = obj.at(given);
  const std::string_view f = given;
  grammar::compiled_ptr& out = s.grammar;
  // The body again, keeping member order, for a schema given as an object (it parsed once already).
  auto ordered_field = [&] {
    nlohmann::ordered_json all = nlohmann::ordered_json::parse(body, nullptr, false);
    return all.is_object() ? all.value(given, nlohmann::ordered_json()) : nlohmann::ordered_json();
  };
  if (f == "response_format") return response_format(v, ordered_field(), out);
  if (f == "json_schema" || f == "guided_json") return schema_field(v, ordered_field(), given, out);
  if (f == "grammar" || f == "guided_grammar") {
    std::string text;
    if (auto e = string_field(v, given, text)) return e;
    return compiled_or_error(grammar::from_gbnf(text), given, out);
  }
  if (f == "guided_regex") {
    std::string text;
    if (auto e = string_field(v, given, text)) return e;
    return compiled_or_error(grammar::from_regex(text), given, out);
  }
  // guided_choice
  if (!v.is_array() || v.empty()) return bad_request("'guided_choice' must be a non-empty array of strings", given);
  std::vector<std::string> choices;
  for (const json& c : v) {
    if (!c.is_string()) return bad_request(fmt::format("'guided_choice' entries must be strings, got {}", json_type_name(c)), given);
    choices.push_back(c.get<std::string>());
  }
  return compiled_or_error(grammar::from_choices(choices), given, out);
}

}  // namespace glia::server
