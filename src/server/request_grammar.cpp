#include "server/request_grammar.h"

#include <fmt/core.h>

#include "sampler/grammar/constraint.h"

namespace glia::server {

using nlohmann::json;

const char* const output_constraint_fields[8] = {"response_format", "grammar",        "json_schema",    "guided_json",
                                                 "guided_regex",    "guided_choice",  "guided_grammar", "structured_outputs"};

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

namespace {

// Whether a present field asks for nothing: response_format text, llama-server's empty grammar
// (clients that always send the field send "").
bool asks_nothing(std::string_view field, const json& v) {
  if (field == "response_format") return v.is_object() && v.value("type", json()) == "text" && !v.contains("json_schema");
  if (field == "grammar") return v.is_string() && v.get_ref<const std::string&>().empty();
  return false;
}

field_error text_field(const json& v, const char* field, result<grammar::compiled_ptr> (*compile)(std::string_view),
                       grammar::compiled_ptr& out) {
  std::string text;
  if (auto e = string_field(v, field, text)) return e;
  return compiled_or_error(compile(text), field, out);
}

field_error choice_field(const json& v, const char* field, grammar::compiled_ptr& out) {
  if (!v.is_array() || v.empty()) return bad_request(fmt::format("'{}' must be a non-empty array of strings", field), field);
  std::vector<std::string> choices;
  for (const json& c : v) {
    if (!c.is_string()) return bad_request(fmt::format("'{}' entries must be strings, got {}", field, json_type_name(c)), field);
    choices.push_back(c.get<std::string>());
  }
  return compiled_or_error(grammar::from_choices(choices), field, out);
}

// vLLM's newer spelling: "structured_outputs": {"json" | "regex" | "choice" | "grammar": ...}.
field_error structured_outputs(const json& v, const nlohmann::ordered_json& ordered, grammar::compiled_ptr& out) {
  constexpr const char* field = "structured_outputs";
  if (!v.is_object()) return bad_request(fmt::format("'structured_outputs' must be an object, got {}", json_type_name(v)), field);
  const char* kind = nullptr;
  for (const auto& [k, x] : v.items()) {
    if (x.is_null()) continue;
    if (k != "json" && k != "regex" && k != "choice" && k != "grammar")
      return bad_request(fmt::format("'structured_outputs.{}' is not supported (json, regex, choice or grammar)", shown(k)), field);
    if (kind) return bad_request("'structured_outputs' may hold one of json, regex, choice and grammar", field);
    kind = k == "json" ? "json" : k == "regex" ? "regex" : k == "choice" ? "choice" : "grammar";
  }
  if (!kind) return bad_request("'structured_outputs' holds none of json, regex, choice and grammar", field);
  const std::string_view k = kind;
  if (k == "json") return schema_field(v.at("json"), ordered.is_object() ? ordered.value("json", nlohmann::ordered_json()) : nlohmann::ordered_json(), field, out);
  if (k == "regex") return text_field(v.at("regex"), field, grammar::from_regex, out);
  if (k == "grammar") return text_field(v.at("grammar"), field, grammar::from_gbnf, out);
  return choice_field(v.at("choice"), field, out);
}

}  // namespace

field_error read_output_constraint(const json& obj, std::string_view body, sampler_params& s) {
  const char* given = nullptr;
  for (const char* f : output_constraint_fields) {
    auto it = obj.find(f);
    if (it == obj.end() || it->is_null()) continue;
    if (asks_nothing(f, *it)) continue;
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
  if (f == "structured_outputs") return structured_outputs(v, ordered_field(), out);
  if (f == "grammar" || f == "guided_grammar") return text_field(v, given, grammar::from_gbnf, out);
  if (f == "guided_regex") return text_field(v, given, grammar::from_regex, out);
  return choice_field(v, given, out);
}

}  // namespace glia::server
