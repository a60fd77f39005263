#include "sampler/grammar/json_schema_merge.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>

#include "sampler/grammar/json_schema_formats.h"

namespace glia::grammar {
namespace merge_detail {
namespace {

// $ref/allOf/anyOf/oneOf nesting at one place in the schema (no property or item in between).
constexpr int max_combinator_depth = 64;
// Alternatives after distributing anyOf/oneOf over their siblings (they multiply).
constexpr size_t max_alternatives = 128;

// Keywords that describe without constraining (OpenAPI's among them), and minContains/maxContains,
// which act only beside "contains" (refused).
const std::set<std::string, std::less<>> annotation_keywords = {
    "title", "description", "examples", "default", "$schema", "$id", "$anchor", "$dynamicAnchor",
    "$recursiveAnchor", "$comment", "$vocabulary", "deprecated", "readOnly", "writeOnly",
    "contentMediaType", "contentEncoding", "contentSchema", "$defs", "definitions", "discriminator",
    "nullable", "example", "externalDocs", "xml", "minContains", "maxContains"};

const std::set<std::string, std::less<>> unsupported_keywords = {
    "not", "contains", "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas",
    "dependencies", "$dynamicRef", "$recursiveRef"};

const std::set<std::string, std::less<>> type_names = {"null", "boolean", "object", "array",
                                                        "number", "integer", "string"};

// Combinators and keywords flatten() applies itself, after the plain ones.
const std::set<std::string, std::less<>> structural_keywords = {
    "$ref", "allOf", "anyOf", "oneOf", "unevaluatedProperties", "unevaluatedItems", "if", "then", "else"};

error keyword_error(std::string_view keyword, const std::string& path, std::string_view what) {
  return make_error("json schema: keyword '{}' at {} {}", keyword, schema_location(path), what);
}

bool is_schema(const ojson& v) { return v.is_object() || v.is_boolean(); }

bool is_true_schema(const ojson& v) { return (v.is_boolean() && v.get<bool>()) || (v.is_object() && v.empty()); }

result<uint64_t> non_negative_integer(std::string_view keyword, const ojson& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return uint64_t(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= 0 && std::floor(d) == d) return d >= 1.8e19 ? UINT64_MAX : uint64_t(d);
  }
  return keyword_error(keyword, path, "must be a non-negative integer, got " + brief_json(v));
}

result<ojson> schema_array(std::string_view keyword, const ojson& v, const std::string& path, bool non_empty) {
  if (!v.is_array() || (non_empty && v.empty()))
    return keyword_error(keyword, path, std::string("must be ") + (non_empty ? "a non-empty" : "an") +
                                            " array of schemas, got " + brief_json(v));
  for (size_t i = 0; i < v.size(); ++i)
    if (!is_schema(v[i]))
      return keyword_error(keyword, path, fmt::format("item {} must be a schema (object or boolean), got {}", i, brief_json(v[i])));
  return v;
}

std::vector<std::string> types_of(const ojson& kw) {
  std::vector<std::string> out;
  if (auto it = kw.find("type"); it != kw.end())
    for (const auto& t : *it) out.push_back(t.get<std::string>());
  return out;
}

// Enum values present in both lists (JSON equality; an object's members in the same order).
ojson enum_intersection(const ojson& a, const ojson& b) {
  ojson out = ojson::array();
  for (const auto& v : a)
    if (std::find(b.begin(), b.end(), v) != b.end() && std::find(out.begin(), out.end(), v) == out.end())
      out.push_back(v);
  return out;
}

// The keywords of one schema object, checked and normalised (see flat_schema).
result<ojson> normalize(const ojson& s, const std::string& path) {
  ojson out = ojson::object();
  bool integer_only = false;
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const ojson& v = it.value();
    if (structural_keywords.count(k) || annotation_keywords.count(k)) continue;
    if (unsupported_keywords.count(k)) return keyword_error(k, path, "is not supported");
    if (k == "type") {
      ojson types = ojson::array();
      const ojson list = v.is_string() ? ojson::array({v}) : v;
      if (!list.is_array() || list.empty())
        return keyword_error(k, path, "must be a type name or a non-empty array of them, got " + brief_json(v));
      for (const auto& t : list) {
        if (!t.is_string() || !type_names.count(t.get<std::string>()))
          return keyword_error(k, path, "names an unknown type " + brief_json(t));
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
      }
      out["type"] = types;
    } else if (k == "enum" || k == "const") {
      ojson values = k == "const" ? ojson::array({v}) : v;
      if (!values.is_array()) return keyword_error(k, path, "must be an array, got " + brief_json(v));
      out["enum"] = out.contains("enum") ? enum_intersection(out["enum"], values) : values;
    } else if (k == "properties") {
      if (!v.is_object()) return keyword_error(k, path, "must be an object, got " + brief_json(v));
      for (auto p = v.begin(); p != v.end(); ++p)
        if (!is_schema(p.value()))
          return keyword_error(k, path, fmt::format("member '{}' must be a schema (object or boolean), got {}", p.key(), brief_json(p.value())));
      out[k] = v;
    } else if (k == "required") {
      if (!v.is_array()) return keyword_error(k, path, "must be an array of strings, got " + brief_json(v));
      ojson names = ojson::array();
      for (const auto& n : v) {
        if (!n.is_string()) return keyword_error(k, path, "must hold strings only, got " + brief_json(n));
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      }
      out[k] = names;
    } else if (k == "additionalProperties") {
      if (!is_schema(v)) return keyword_error(k, path, "must be a schema (object or boolean), got " + brief_json(v));
      out[k] = v;
    } else if (k == "items") {
      if (v.is_array()) {  // draft-07 tuple form
        GLIA_ASSIGN(ojson prefix, schema_array(k, v, path, false));
        if (s.contains("prefixItems")) return keyword_error(k, path, "as an array cannot be combined with 'prefixItems'");
        out["prefixItems"] = prefix;
        if (auto extra = s.find("additionalItems"); extra != s.end()) {
          if (!is_schema(*extra))
            return keyword_error("additionalItems", path, "must be a schema (object or boolean), got " + brief_json(*extra));
          out["items"] = *extra;
        }
      } else if (is_schema(v)) {
        out["items"] = v;
      } else {
        return keyword_error(k, path, "must be a schema (object or boolean), got " + brief_json(v));
      }
    } else if (k == "prefixItems") {
      GLIA_ASSIGN(out[k], schema_array(k, v, path, false));
    } else if (k == "additionalItems") {
      continue;  // read with an array-form "items"; without one it has no effect
    } else if (k == "minItems" || k == "maxItems" || k == "minLength" || k == "maxLength" ||
               k == "minProperties" || k == "maxProperties") {
      GLIA_ASSIGN(uint64_t n, non_negative_integer(k, v, path));
      out[k] = n;
    } else if (k == "uniqueItems") {
      if (!v.is_boolean()) return keyword_error(k, path, "must be a boolean, got " + brief_json(v));
      if (v.get<bool>()) out[k] = true;
    } else if (k == "minimum" || k == "maximum") {
      if (!v.is_number() || !std::isfinite(double(json_number_value(v))))
        return keyword_error(k, path, "must be a finite number, got " + brief_json(v));
      out[k] = v;
    } else if (k == "exclusiveMinimum" || k == "exclusiveMaximum") {
      if (v.is_boolean()) continue;  // draft-04 form: folded in below
      if (!v.is_number() || !std::isfinite(double(json_number_value(v))))
        return keyword_error(k, path, "must be a finite number, got " + brief_json(v));
      out[k] = v;
    } else if (k == "multipleOf") {
      if (!v.is_number() || !(json_number_value(v) > 0))
        return keyword_error(k, path, "must be a number above 0, got " + brief_json(v));
      if (json_number_value(v) != 1) return keyword_error(k, path, fmt::format("= {} is not supported (only 1)", brief_json(v)));
      integer_only = true;
    } else if (k == "pattern") {
      if (!v.is_string()) return keyword_error(k, path, "must be a string, got " + brief_json(v));
      out[k] = v;
    } else if (k == "format") {
      if (!v.is_string()) return keyword_error(k, path, "must be a string, got " + brief_json(v));
      if (is_supported_format(v.get<std::string>())) out[k] = v;  // others are annotations
    }
    // Any other keyword is unknown to JSON Schema and, as validators do, ignored.
  }
  // Draft-04: "exclusiveMinimum": true makes "minimum" exclusive.
  for (auto [flag, bound] : {std::pair{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}}) {
    auto f = s.find(flag);
    if (f == s.end() || !f->is_boolean() || !f->get<bool>()) continue;
    if (!out.contains(bound)) return keyword_error(flag, path, fmt::format("is true but '{}' is absent", bound));
    out[flag] = out[bound];
    out.erase(bound);
  }
  if (integer_only) {  // multipleOf 1: numbers must be integers
    if (!out.contains("type")) {
      out["type"] = ojson::array({"integer"});
    } else {
      ojson types = ojson::array();
      for (const auto& t : out["type"]) {
        const ojson name = t == "number" ? ojson("integer") : t;
        if (std::find(types.begin(), types.end(), name) == types.end()) types.push_back(name);
      }
      out["type"] = types;
    }
  }
  return out;
}

enum class extra_kind { absent, allowed, forbidden, schema };

extra_kind additional_kind(const ojson& kw) {
  auto it = kw.find("additionalProperties");
  if (it == kw.end()) return extra_kind::absent;
  if (it->is_boolean()) return it->get<bool>() ? extra_kind::allowed : extra_kind::forbidden;
  return extra_kind::schema;
}

// Merges the object keywords of a and b into out; false when they contradict (a required property
// that one side forbids).
bool merge_object_keywords(const ojson& a, const ojson& b, ojson& out) {
  static const ojson no_properties = ojson::object();
  const ojson& pa = a.contains("properties") ? a["properties"] : no_properties;
  const ojson& pb = b.contains("properties") ? b["properties"] : no_properties;
  ojson required = ojson::array();
  for (const ojson* side : {&a, &b})
    if (side->contains("required"))
      for (const auto& n : (*side)["required"])
        if (std::find(required.begin(), required.end(), n) == required.end()) required.push_back(n);

  std::vector<std::string> keys;
  for (auto it = pa.begin(); it != pa.end(); ++it) keys.push_back(it.key());
  for (auto it = pb.begin(); it != pb.end(); ++it)
    if (!pa.contains(it.key())) keys.push_back(it.key());

  ojson properties = ojson::object();
  for (const std::string& key : keys) {
    std::vector<ojson> parts;
    bool forbidden = false;
    for (auto [side, props] : {std::pair{&a, &pa}, {&b, &pb}}) {
      if (props->contains(key)) {
        parts.push_back((*props)[key]);
      } else if (additional_kind(*side) == extra_kind::forbidden) {
        forbidden = true;
      } else if (additional_kind(*side) == extra_kind::schema) {
        parts.push_back((*side)["additionalProperties"]);
      }
    }
    if (forbidden) {
      if (std::find(required.begin(), required.end(), key) != required.end()) return false;
      continue;
    }
    properties[key] = all_of(parts);
  }
  if (a.contains("properties") || b.contains("properties")) out["properties"] = properties;
  if (!required.empty()) out["required"] = required;

  const extra_kind ka = additional_kind(a), kb = additional_kind(b);
  if (ka == extra_kind::forbidden || kb == extra_kind::forbidden) {
    out["additionalProperties"] = false;
  } else if (ka == extra_kind::schema || kb == extra_kind::schema) {
    std::vector<ojson> parts;
    if (ka == extra_kind::schema) parts.push_back(a["additionalProperties"]);
    if (kb == extra_kind::schema) parts.push_back(b["additionalProperties"]);
    out["additionalProperties"] = all_of(parts);
  } else if (ka == extra_kind::allowed || kb == extra_kind::allowed) {
    out["additionalProperties"] = true;
  }
  return true;
}

void merge_array_keywords(const ojson& a, const ojson& b, ojson& out) {
  static const ojson none = ojson::array();
  const ojson& pa = a.contains("prefixItems") ? a["prefixItems"] : none;
  const ojson& pb = b.contains("prefixItems") ? b["prefixItems"] : none;
  auto at = [](const ojson& side, const ojson& prefix, size_t i) -> std::optional<ojson> {
    if (i < prefix.size()) return prefix[i];
    if (side.contains("items")) return side["items"];
    return std::nullopt;
  };
  const size_t n = std::max(pa.size(), pb.size());
  if (n > 0) {
    ojson prefix = ojson::array();
    for (size_t i = 0; i < n; ++i) {
      std::vector<ojson> parts;
      for (auto [side, p] : {std::pair{&a, &pa}, {&b, &pb}})
        if (auto s = at(*side, *p, i)) parts.push_back(*s);
      prefix.push_back(all_of(parts));
    }
    out["prefixItems"] = prefix;
  }
  std::vector<ojson> items;
  for (const ojson* side : {&a, &b})
    if (side->contains("items")) items.push_back((*side)["items"]);
  if (!items.empty()) out["items"] = all_of(items);
}

// Tighter of two bounds: the larger lower one, the smaller upper one.
void merge_bound(const ojson& a, const ojson& b, const char* key, bool keep_larger, ojson& out) {
  const bool in_a = a.contains(key), in_b = b.contains(key);
  if (!in_a && !in_b) return;
  if (in_a && in_b) {
    const bool a_wins = keep_larger ? json_number_value(a[key]) >= json_number_value(b[key]) : json_number_value(a[key]) <= json_number_value(b[key]);
    out[key] = a_wins ? a[key] : b[key];
  } else {
    out[key] = in_a ? a[key] : b[key];
  }
}

// The conjunction of two flat alternatives; nullopt when no value satisfies both.
result<std::optional<ojson>> merge(const ojson& a, const ojson& b, const std::string& path) {
  ojson out = ojson::object();
  const std::vector<std::string> ta = types_of(a), tb = types_of(b);
  if (a.contains("type") && b.contains("type")) {
    ojson types = ojson::array();
    for (const std::string& t : ta) {
      const bool in_b = std::find(tb.begin(), tb.end(), t) != tb.end();
      std::string kept;
      if (in_b) {
        kept = t;
      } else if ((t == "integer" && std::find(tb.begin(), tb.end(), "number") != tb.end()) ||
                 (t == "number" && std::find(tb.begin(), tb.end(), "integer") != tb.end())) {
        kept = "integer";
      }
      if (!kept.empty() && std::find(types.begin(), types.end(), kept) == types.end()) types.push_back(kept);
    }
    if (types.empty()) return std::optional<ojson>();
    out["type"] = types;
  } else if (a.contains("type") || b.contains("type")) {
    out["type"] = a.contains("type") ? a["type"] : b["type"];
  }
  if (a.contains("enum") && b.contains("enum")) {
    out["enum"] = enum_intersection(a["enum"], b["enum"]);
    if (out["enum"].empty()) return std::optional<ojson>();
  } else if (a.contains("enum") || b.contains("enum")) {
    out["enum"] = a.contains("enum") ? a["enum"] : b["enum"];
  }
  if (!merge_object_keywords(a, b, out)) return std::optional<ojson>();
  merge_array_keywords(a, b, out);
  for (const char* key : {"minItems", "minLength", "minProperties", "minimum", "exclusiveMinimum"})
    merge_bound(a, b, key, true, out);
  for (const char* key : {"maxItems", "maxLength", "maxProperties", "maximum", "exclusiveMaximum"})
    merge_bound(a, b, key, false, out);
  if (a.contains("uniqueItems") || b.contains("uniqueItems")) out["uniqueItems"] = true;
  for (const char* key : {"pattern", "format"}) {
    if (a.contains(key) && b.contains(key) && a[key] != b[key])
      return make_error("json schema: allOf at {} combines two different '{}' values ({} and {}), which is not supported",
                        schema_location(path), key, brief_json(a[key]), brief_json(b[key]));
    if (a.contains(key) || b.contains(key)) out[key] = a.contains(key) ? a[key] : b[key];
  }
  return std::optional<ojson>(std::move(out));
}

result<std::vector<flat_schema>> conjoin(const std::vector<flat_schema>& xs, const std::vector<flat_schema>& ys,
                                         const std::string& path) {
  std::vector<flat_schema> out;
  for (const flat_schema& x : xs)
    for (const flat_schema& y : ys) {
      if (out.size() >= max_alternatives)
        return make_error("json schema: anyOf/oneOf at {} expand to over {} alternatives", schema_location(path), max_alternatives);
      // An empty side leaves the other as written, so the same definition reached through
      // different schemas stays one alternative (and one rule).
      if (x.keywords.empty() || y.keywords.empty()) {
        out.push_back(x.keywords.empty() ? y : x);
        continue;
      }
      GLIA_ASSIGN(std::optional<ojson> m, merge(x.keywords, y.keywords, path));
      if (m) out.push_back({std::move(*m), x.path});
    }
  return out;
}

// Whether a value has one of the named JSON types (an integral number is an integer, as Python's
// jsonschema reads 1.0).
bool has_type(const ojson& v, const ojson& types) {
  for (const auto& t : types) {
    const std::string name = t.get<std::string>();
    if ((name == "null" && v.is_null()) || (name == "boolean" && v.is_boolean()) || (name == "string" && v.is_string()) ||
        (name == "object" && v.is_object()) || (name == "array" && v.is_array()) || (name == "number" && v.is_number()))
      return true;
    if (name == "integer" && json_number_is_integral(v)) return true;
  }
  return false;
}

// Drops the enum values of the wrong type; false when none is left (the alternative is empty), so
// a branch of anyOf that contradicts its siblings' type vanishes instead of failing the schema.
bool prune_enum_by_type(ojson& kw) {
  if (!kw.contains("enum") || !kw.contains("type")) return true;
  ojson kept = ojson::array();
  for (const auto& v : kw["enum"])
    if (has_type(v, kw["type"])) kept.push_back(v);
  kw["enum"] = kept;
  return !kept.empty();
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += char(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace
}  // namespace merge_detail

std::string schema_location(const std::string& path) {
  if (path.size() <= 160) return "#" + path;
  return "#" + path.substr(0, 60) + "..." + path.substr(path.size() - 90);  // messages stay short
}

std::string json_pointer_escape(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

long double json_number_value(const ojson& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

bool json_number_is_integral(const ojson& v) {
  if (!v.is_number_float()) return v.is_number();
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

std::string brief_json(const ojson& value) {
  std::string text = value.dump(-1, ' ', false, ojson::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

ojson all_of(const std::vector<ojson>& parts) {
  std::vector<ojson> members;
  for (const ojson& p : parts) {
    if (p.is_boolean() && !p.get<bool>()) return false;
    const bool nested = p.is_object() && p.size() == 1 && p.contains("allOf") && p["allOf"].is_array();
    const std::vector<ojson> items = nested ? p["allOf"].get<std::vector<ojson>>() : std::vector<ojson>{p};
    for (const ojson& m : items) {
      if (merge_detail::is_true_schema(m)) continue;
      if (m.is_boolean()) return false;
      if (std::find(members.begin(), members.end(), m) == members.end()) members.push_back(m);
    }
  }
  if (members.empty()) return true;
  if (members.size() == 1) return members[0];
  return ojson{{"allOf", members}};
}

result<std::pair<const ojson*, std::string>> schema_flattener::resolve(const std::string& ref,
                                                                       const std::string& path) const {
  auto bad = [&](std::string_view why) {
    return make_error("json schema: keyword '$ref' at {} = {}: {}", schema_location(path), brief_json(ref), why);
  };
  if (ref.empty() || ref[0] != '#') return bad("only local references ('#...') are supported");
  const std::string pointer = merge_detail::percent_decode(std::string_view(ref).substr(1));
  if (!pointer.empty() && pointer[0] != '/') return bad("anchors are not supported, only JSON pointers");
  const ojson* at = &root_;
  std::string at_path;
  size_t pos = 1;
  while (pos <= pointer.size() && !pointer.empty()) {
    size_t end = pointer.find('/', pos);
    if (end == std::string::npos) end = pointer.size();
    std::string token;
    for (size_t i = pos; i < end; ++i) {
      if (pointer[i] == '~' && i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token += pointer[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += pointer[i];
      }
    }
    if (at->is_object() && at->contains(token)) {
      at = &(*at)[token];
    } else if (at->is_array() && !token.empty() && token.size() < 10 &&
               token.find_first_not_of("0123456789") == std::string::npos && (token == "0" || token[0] != '0') &&
               std::stoul(token) < at->size()) {
      at = &(*at)[std::stoul(token)];
    } else {
      return bad("no such location in the schema");
    }
    at_path += "/" + json_pointer_escape(token);
    pos = end + 1;
  }
  return std::pair{at, at_path};
}

result<std::vector<flat_schema>> schema_flattener::flatten(const ojson& schema, const std::string& path) {
  return flatten_at(schema, path, 0);
}

result<std::vector<flat_schema>> schema_flattener::flatten_at(const ojson& schema, const std::string& path, int depth) {
  using merge_detail::conjoin;
  using merge_detail::keyword_error;
  using merge_detail::max_alternatives;
  using merge_detail::max_combinator_depth;
  using merge_detail::normalize;
  using merge_detail::schema_array;
  if (depth > max_combinator_depth)
    return make_error("json schema: $ref/allOf/anyOf/oneOf at {} nest deeper than {}", schema_location(path), max_combinator_depth);
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return std::vector<flat_schema>{{ojson::object(), path}};
    return std::vector<flat_schema>{};
  }
  if (!schema.is_object())
    return make_error("json schema: the schema at {} must be an object or a boolean, got {}", schema_location(path), brief_json(schema));
  GLIA_ASSIGN(ojson base, normalize(schema, path));
  // Conjuncts in the order a reader takes them: what the schema builds on ($ref, allOf) first, so
  // inherited properties come before the schema's own, then its own keywords, then the branches.
  std::vector<flat_schema> alts{{ojson::object(), path}};

  if (auto ref = schema.find("$ref"); ref != schema.end()) {
    if (!ref->is_string()) return keyword_error("$ref", path, "must be a string, got " + brief_json(*ref));
    GLIA_ASSIGN(auto target, resolve(ref->get<std::string>(), path));
    if (std::find(expanding_.begin(), expanding_.end(), target.first) != expanding_.end())
      return make_error("json schema: keyword '$ref' at {} = {} refers back to itself without a property or item in between",
                        schema_location(path), brief_json(*ref));
    expanding_.push_back(target.first);
    auto flat = flatten_at(*target.first, target.second, depth + 1);
    expanding_.pop_back();
    if (!flat.is_ok()) return flat.take_error();
    GLIA_ASSIGN(alts, conjoin(alts, *flat, path));
  }
  if (auto all = schema.find("allOf"); all != schema.end()) {
    GLIA_ASSIGN(ojson parts, schema_array("allOf", *all, path, true));
    for (size_t i = 0; i < parts.size(); ++i) {
      GLIA_ASSIGN(std::vector<flat_schema> flat, flatten_at(parts[i], fmt::format("{}/allOf/{}", path, i), depth + 1));
      GLIA_ASSIGN(alts, conjoin(alts, flat, path));
    }
  }
  GLIA_ASSIGN(alts, conjoin(alts, {{std::move(base), path}}, path));
  for (const char* keyword : {"anyOf", "oneOf"}) {
    auto any = schema.find(keyword);
    if (any == schema.end()) continue;
    GLIA_ASSIGN(ojson parts, schema_array(keyword, *any, path, true));
    std::vector<flat_schema> branches;
    for (size_t i = 0; i < parts.size(); ++i) {
      GLIA_ASSIGN(std::vector<flat_schema> flat, flatten_at(parts[i], fmt::format("{}/{}/{}", path, keyword, i), depth + 1));
      for (flat_schema& f : flat) branches.push_back(std::move(f));
      if (branches.size() > max_alternatives)
        return make_error("json schema: {} at {} expands to over {} alternatives", keyword, schema_location(path), max_alternatives);
    }
    GLIA_ASSIGN(alts, conjoin(alts, branches, path));
  }
  if (schema.contains("if") && (schema.contains("then") || schema.contains("else")))
    return keyword_error("if", path, "is not supported");

  alts.erase(std::remove_if(alts.begin(), alts.end(), [](flat_schema& f) { return !merge_detail::prune_enum_by_type(f.keywords); }),
             alts.end());

  // unevaluated*: false after the in-place applicators above are merged in: the merged properties
  // (items) are the evaluated ones, so nothing may come beyond them.
  if (auto u = schema.find("unevaluatedProperties"); u != schema.end()) {
    if (!u->is_boolean()) return keyword_error("unevaluatedProperties", path, "is only supported as a boolean");
    if (!u->get<bool>())
      for (flat_schema& f : alts) f.keywords["additionalProperties"] = false;
  }
  if (auto u = schema.find("unevaluatedItems"); u != schema.end()) {
    if (!u->is_boolean()) return keyword_error("unevaluatedItems", path, "is only supported as a boolean");
    if (!u->get<bool>())
      for (flat_schema& f : alts)
        if (!f.keywords.contains("items")) f.keywords["items"] = false;
  }
  return alts;
}

}  // namespace glia::grammar
