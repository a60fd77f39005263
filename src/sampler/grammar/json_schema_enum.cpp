#include "sampler/grammar/json_schema_enum.h"

#include <fmt/format.h>

#include <cmath>

#include "sampler/grammar/json_schema_chars.h"
#include "sampler/grammar/json_schema_rules.h"

namespace glia::grammar {
namespace enum_detail {
namespace {

constexpr int max_literal_depth = 64;  // an enum value's nesting becomes nested groups in one rule

const char* json_type_of(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::boolean: return "boolean";
    case ojson::value_t::string: return "string";
    case ojson::value_t::object: return "object";
    case ojson::value_t::array: return "array";
    default: return "number";
  }
}

result<std::u32string> decoded(const std::string& utf8, const std::string& path) {
  std::u32string out;
  if (!decode_utf8(utf8, out)) return make_error("json schema: a string at {} is not valid UTF-8", schema_location(path));
  return out;
}

result<std::string> literal_at(const ojson& v, const std::string& sp, const std::string& path, int depth) {
  if (depth > max_literal_depth)
    return make_error("json schema: an enum/const value at {} nests deeper than {} levels", schema_location(path), max_literal_depth);
  if (v.is_string()) {
    GLIA_ASSIGN(std::u32string text, decoded(v.get<std::string>(), path));
    return gbnf_literal(U"\"" + json_escaped(text) + U"\"");
  }
  if (!v.is_object() && !v.is_array()) return gbnf_literal_utf8(v.dump());
  std::vector<std::string> parts{v.is_object() ? "\"{\"" : "\"[\"", sp};
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) parts.insert(parts.end(), {"\",\"", sp});
    first = false;
    if (v.is_object()) {
      GLIA_ASSIGN(std::u32string key, decoded(it.key(), path));
      parts.insert(parts.end(), {gbnf_literal(U"\"" + json_escaped(key) + U"\""), sp, "\":\"", sp});
    }
    GLIA_ASSIGN(std::string element, literal_at(it.value(), sp, path, depth + 1));
    parts.insert(parts.end(), {element, sp});
  }
  parts.push_back(v.is_object() ? "\"}\"" : "\"]\"");
  return fmt::format("({})", gbnf_join(parts, " "));
}

}  // namespace
}  // namespace enum_detail

result<bool> enum_value_allowed(const ojson& kw, const std::vector<std::string>& types, const ojson& v,
                                const std::string& path) {
  const std::string type = enum_detail::json_type_of(v);
  if (!types.empty()) {
    const bool integral = v.is_number() && json_number_is_integral(v);
    bool ok = false;
    for (const std::string& t : types) ok |= t == type || (t == "integer" && integral);
    if (!ok) return false;
  }
  auto unsupported = [&](std::initializer_list<const char*> keys) -> const char* {
    for (const char* k : keys)
      if (kw.contains(k)) return k;
    return nullptr;
  };
  const char* blocked = nullptr;
  if (type == "string") {
    blocked = unsupported({"pattern", "format"});
    if (!blocked) {
      GLIA_ASSIGN(std::u32string text, enum_detail::decoded(v.get<std::string>(), path));
      if (kw.contains("minLength") && text.size() < kw["minLength"].get<uint64_t>()) return false;
      if (kw.contains("maxLength") && text.size() > kw["maxLength"].get<uint64_t>()) return false;
    }
  } else if (type == "number") {
    const long double x = json_number_value(v);
    if (kw.contains("minimum") && x < json_number_value(kw["minimum"])) return false;
    if (kw.contains("maximum") && x > json_number_value(kw["maximum"])) return false;
    if (kw.contains("exclusiveMinimum") && x <= json_number_value(kw["exclusiveMinimum"])) return false;
    if (kw.contains("exclusiveMaximum") && x >= json_number_value(kw["exclusiveMaximum"])) return false;
  } else if (type == "object") {
    blocked = unsupported({"properties", "required", "additionalProperties", "minProperties", "maxProperties"});
  } else if (type == "array") {
    blocked = unsupported({"items", "prefixItems", "minItems", "maxItems", "uniqueItems"});
  }
  if (blocked)
    return make_error("json schema: keyword '{}' at {} beside enum/const is not supported", blocked, schema_location(path));
  return true;
}

result<std::string> json_literal_expr(const ojson& value, const std::string& space_rule, const std::string& path) {
  return enum_detail::literal_at(value, space_rule, path, 0);
}

}  // namespace glia::grammar
