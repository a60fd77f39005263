#include "sampler/grammar/constraint.h"

#include "core/json_depth.h"
#include "core/json_error.h"
#include "sampler/grammar/json_schema.h"
#include "sampler/grammar/json_schema_chars.h"
#include "sampler/grammar/regex_gbnf.h"

namespace glia::grammar {
namespace {

// Schemas nest deeper than configuration files (objects in arrays in objects ...), but not without limit.
constexpr size_t max_schema_depth = 128;

result<compiled_ptr> compile_schema_grammar(const result<std::string>& text) {
  if (!text) return text.take_error();
  auto g = parse_gbnf(*text);
  if (!g) return make_error("json schema: the grammar made from it does not parse ({})", g.message());
  return g;
}

}  // namespace

result<compiled_ptr> from_gbnf(std::string_view gbnf) { return parse_gbnf(gbnf); }

result<compiled_ptr> from_json_schema(const nlohmann::ordered_json& schema) { return compile_schema_grammar(json_schema_to_gbnf(schema)); }

result<std::string> json_schema_text_to_gbnf(std::string_view schema_text) {
  if (const size_t depth = json_nesting_depth(schema_text); depth > max_schema_depth)
    return make_error("json schema: nested {} levels deep; the limit is {}", depth, max_schema_depth);
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(schema_text);
  } catch (const nlohmann::json::exception& e) {
    return make_error("json schema: not valid JSON: {}", json_error_reason(e.what()));
  }
  return json_schema_to_gbnf(schema);
}

result<compiled_ptr> from_json_schema_text(std::string_view schema_text) {
  return compile_schema_grammar(json_schema_text_to_gbnf(schema_text));
}

result<compiled_ptr> json_object() { return from_json_schema(nlohmann::ordered_json{{"type", "object"}}); }

result<compiled_ptr> from_regex(std::string_view regex) {
  auto text = regex_to_gbnf(regex);
  if (!text) return text.take_error();
  return parse_gbnf(*text);
}

result<compiled_ptr> from_choices(const std::vector<std::string>& choices) {
  if (choices.empty()) return make_error("choices: the list is empty");
  std::string g = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    std::u32string cps;
    if (!decode_utf8(choices[i], cps)) return make_error("choices: choice {} is not valid UTF-8", i);
    g += (i ? " | " : "") + gbnf_literal(cps);
  }
  return parse_gbnf(g);
}

}  // namespace glia::grammar
