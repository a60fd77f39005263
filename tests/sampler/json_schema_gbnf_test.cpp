// JSON Schema -> GBNF against Python's jsonschema: json_schema_cases.json (written by
// gen_json_schema_cases.py from jsonschema itself, never from glia) holds schemas with candidate
// texts and their validity. Every grammar must parse, accept every valid canonical text and reject
// every invalid one; a text with a note (member order, extra whitespace, a documented policy) may be
// rejected although valid, but never accepted when invalid. Then the refusals: unsupported
// keywords, malformed schemas and hostile sizes all give one-line errors, never a crash.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sampler/grammar/grammar.h"
#include "sampler/grammar/json_schema.h"
#include "test_support.h"

namespace glia::grammar::json_schema_test {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& corpus() {
  static const ojson doc = [] {
    const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path();
    return ojson::parse(test::read_text((here / "json_schema_cases.json").string()));
  }();
  return doc;
}

// The grammar of a schema that must convert, or nullptr after a failure.
std::shared_ptr<const compiled> schema_grammar(const ojson& schema, std::string* text = nullptr) {
  auto gbnf = json_schema_to_gbnf(schema);
  EXPECT_TRUE(gbnf.is_ok()) << schema.dump() << "\n  " << gbnf.message();
  if (!gbnf.is_ok()) return nullptr;
  if (text) *text = *gbnf;
  auto g = parse_gbnf(*gbnf);
  EXPECT_TRUE(g.is_ok()) << g.message() << "\n" << *gbnf;
  return g.is_ok() ? *g : nullptr;
}

std::shared_ptr<const compiled> schema_grammar_text(std::string_view schema_text) {
  return schema_grammar(ojson::parse(schema_text));
}

TEST(JsonSchemaGbnf, CorpusIsLarge) {
  size_t texts = 0;
  for (const auto& s : corpus()["schemas"]) texts += s["cases"].size();
  EXPECT_GE(corpus()["schemas"].size(), 60u);
  EXPECT_GE(texts, 500u);
}

TEST(JsonSchemaGbnf, GrammarsAgreeWithJsonschema) {
  size_t checked = 0;
  for (const auto& s : corpus()["schemas"]) {
    const std::string name = s["name"];
    std::string text;
    auto g = schema_grammar(s["schema"], &text);
    if (!g) {
      ADD_FAILURE() << name << ": no grammar";
      continue;
    }
    for (const auto& c : s["cases"]) {
      const std::string instance = c["text"];
      const bool valid = c["valid"];
      const bool accepted = matches(*g, instance);
      ++checked;
      if (accepted && !valid) {
        ADD_FAILURE() << name << ": accepts the invalid " << instance << "\n" << text;
      } else if (!accepted && valid && !c.contains("note")) {
        ADD_FAILURE() << name << ": rejects the valid " << instance << "\n" << text;
      }
    }
  }
  EXPECT_GE(checked, 500u);
}

TEST(JsonSchemaGbnf, PropertiesFollowTheSchemaOrder) {
  const char* schema = R"({"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}},
                           "required": ["zeta", "alpha"], "additionalProperties": false})";
  auto ordered = schema_grammar_text(schema);
  ASSERT_TRUE(ordered);
  EXPECT_TRUE(matches(*ordered, R"({"zeta": 1, "alpha": 2})"));
  EXPECT_FALSE(matches(*ordered, R"({"alpha": 2, "zeta": 1})"));
  // nlohmann::json sorts members: the documented fallback is alphabetical order.
  auto sorted_text = json_schema_to_gbnf(nlohmann::json::parse(schema));
  ASSERT_TRUE(sorted_text.is_ok()) << sorted_text.message();
  auto sorted = parse_gbnf(*sorted_text);
  ASSERT_TRUE(sorted.is_ok()) << sorted.message();
  EXPECT_TRUE(matches(**sorted, R"({"alpha": 2, "zeta": 1})"));
}

TEST(JsonSchemaGbnf, WhitespaceIsOptionalAndBounded) {
  auto g = schema_grammar_text(R"({"type": "array", "items": {"type": "integer"}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, "[1,2]"));
  EXPECT_TRUE(matches(*g, "[ 1 , 2 ]"));
  EXPECT_TRUE(matches(*g, "[\n" + std::string(20, ' ') + "1]"));
  EXPECT_TRUE(matches(*g, "[\n\t\t1\n]\n"));
  EXPECT_FALSE(matches(*g, "[\n" + std::string(21, ' ') + "1]"));  // past the bound
  EXPECT_FALSE(matches(*g, "[  1]"));                               // two spaces
  EXPECT_FALSE(matches(*g, "\n[1]"));                               // nothing before the value
  EXPECT_FALSE(matches(*g, "[1]\n\n"));
  EXPECT_FALSE(matches(*g, "[\r\n1]"));
  // A model cannot spin on whitespace: after "[" and the longest whitespace, only a value may come.
  EXPECT_TRUE(is_prefix(*g, "[\n" + std::string(20, ' ')));
  EXPECT_FALSE(is_prefix(*g, "[\n" + std::string(21, ' ')));
}

TEST(JsonSchemaGbnf, StringsNeverHoldRawControlCharactersAndTakeEveryEscape) {
  auto g = schema_grammar_text(R"({"type": "string"})");
  ASSERT_TRUE(g);
  for (const char* ok : {R"("")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\u00E9\uFFFF\u0000")", R"("\ud83d\ude00")",
                         "\"\xC3\xA9\xF0\x9F\x98\x80\x7F\""})
    EXPECT_TRUE(matches(*g, ok)) << ok;
  for (const char* bad : {"\"a\nb\"", "\"a\tb\"", "\"\x01\"", R"("\x41")", R"("\u12")", R"("\ud83d")", R"("\ude00")",
                          R"("\ud83d\u0041")", R"("\a")", R"(")", R"("a"b")"})
    EXPECT_FALSE(matches(*g, bad)) << bad;
}

TEST(JsonSchemaGbnf, NumbersFollowRfc8259) {
  auto g = schema_grammar_text(R"({"type": "number"})");
  ASSERT_TRUE(g);
  for (const char* ok : {"0", "-0", "1.5", "-12.25e+10", "1E-3", "9999999999999999", "-9999999999999999.9999999999999999e-99"})
    EXPECT_TRUE(matches(*g, ok)) << ok;
  // Past 16 digits or a two-digit exponent a model could write a number no double holds (1e999).
  for (const char* bad : {"01", "+1", ".5", "1.", "NaN", "-Infinity", "1e", "0x1", "1.5.5", "--1", "99999999999999999", "1e999",
                          "-88888888888888888888E444"})
    EXPECT_FALSE(matches(*g, bad)) << bad;
  // An integer on an open side: 15 digits (exact in a double and in JavaScript, and int64); past a
  // large bound on the other side, up to three more digits than it has, within int64.
  auto i = schema_grammar_text(R"({"type": "integer"})");
  ASSERT_TRUE(i);
  EXPECT_TRUE(matches(*i, "-999999999999999"));
  EXPECT_FALSE(matches(*i, "1000000000000000"));
  EXPECT_FALSE(matches(*i, "63333333333333333333"));
  auto above = schema_grammar_text(R"({"type": "integer", "minimum": 10000000000000000})");
  ASSERT_TRUE(above);
  EXPECT_TRUE(matches(*above, "9223372036854775807"));
  EXPECT_FALSE(matches(*above, "9223372036854775808"));
  EXPECT_FALSE(matches(*above, "9999999999999999"));
  auto near_open = schema_grammar_text(R"({"type": "integer", "minimum": 999999999999999})");
  ASSERT_TRUE(near_open);
  EXPECT_TRUE(matches(*near_open, "999999999999999000"));  // no cliff where the bound has 15 digits
  EXPECT_FALSE(matches(*near_open, "999999999999999001"));
  auto uint64 = schema_grammar_text(R"({"type": "integer", "minimum": 18446744073709551615})");
  ASSERT_TRUE(uint64);
  EXPECT_TRUE(matches(*uint64, "18446744073709551615"));
  auto below = schema_grammar_text(R"({"type": "integer", "maximum": 3})");
  ASSERT_TRUE(below);
  EXPECT_TRUE(matches(*below, "-999999999999999"));
  EXPECT_FALSE(matches(*below, "-1000000000000000"));
}

// Integer ranges are checked against plain arithmetic at and around random 64-bit bounds.
TEST(JsonSchemaGbnf, IntegerRangesAreExactAtAnyBounds) {
  std::mt19937_64 rng(1234);
  auto pick = [&]() -> int64_t {
    switch (rng() % 4) {
      case 0: return int64_t(rng() % 2001) - 1000;
      case 1: return int64_t(rng());
      case 2: return rng() % 2 ? INT64_MAX - int64_t(rng() % 3) : INT64_MIN + int64_t(rng() % 3);
      default: return int64_t(rng() % 200000) * (rng() % 2 ? 1 : -1) * 1000003;
    }
  };
  for (int round = 0; round < 40; ++round) {
    int64_t lo = pick(), hi = pick();
    if (lo > hi) std::swap(lo, hi);
    ojson schema = {{"type", "integer"}, {"minimum", lo}, {"maximum", hi}};
    auto g = schema_grammar(schema);
    ASSERT_TRUE(g);
    std::vector<__int128> probes = {lo, hi, __int128(lo) - 1, __int128(hi) + 1, 0, -1, 1};
    const uint64_t width = uint64_t(hi) - uint64_t(lo);
    for (int k = 0; k < 20; ++k) probes.push_back(__int128(lo) + __int128(rng() % (width / 2 + 1)) * 2);
    for (__int128 v : probes) {
      std::string text;
      __int128 m = v < 0 ? -v : v;
      do {
        text.insert(text.begin(), char('0' + int(m % 10)));
        m /= 10;
      } while (m != 0);
      if (v < 0) text.insert(text.begin(), '-');
      EXPECT_EQ(matches(*g, text), v >= lo && v <= hi) << lo << ".." << hi << ": " << text;
    }
  }
}

// ---- refusals ----

struct refusal {
  const char* schema;
  std::vector<const char*> mentions;  // substrings the message must hold
};

void expect_refused(const std::string& schema_text, const std::vector<const char*>& mentions) {
  auto r = json_schema_to_gbnf(ojson::parse(schema_text));
  ASSERT_FALSE(r.is_ok()) << schema_text.substr(0, 200) << "\n" << *r;
  const std::string& m = r.message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_EQ(m.rfind("json schema:", 0), 0u) << m;
  EXPECT_LT(m.size(), 400u) << m;
  for (const char* s : mentions) EXPECT_NE(m.find(s), std::string::npos) << "'" << s << "' not in: " << m;
}

TEST(JsonSchemaGbnf, RefusesKeywordsItCannotExpress) {
  const std::vector<refusal> cases = {
      {R"({"type": "object", "properties": {"x": {"type": "integer", "multipleOf": 5}}})", {"'multipleOf'", "#/properties/x", "5"}},
      {R"({"not": {"type": "string"}})", {"'not'", "#"}},
      {R"({"type": "object", "patternProperties": {"^a": {}}})", {"'patternProperties'"}},
      {R"({"type": "object", "propertyNames": {"maxLength": 3}})", {"'propertyNames'"}},
      {R"({"if": {"type": "string"}, "then": {"minLength": 2}})", {"'if'"}},
      {R"({"type": "array", "contains": {"type": "integer"}})", {"'contains'"}},
      {R"({"type": "array", "uniqueItems": true})", {"'uniqueItems'"}},
      {R"({"dependentRequired": {"a": ["b"]}})", {"'dependentRequired'"}},
      {R"({"type": "object", "minProperties": 1})", {"'minProperties'"}},
      {R"({"type": "object", "properties": {"a": {}}, "maxProperties": 0})", {"'maxProperties'"}},
      {R"({"type": "number", "minimum": 0.5})", {"'minimum'", "0.5"}},
      {R"({"type": "number", "exclusiveMaximum": 1e12})", {"'exclusiveMaximum'"}},
      {R"({"type": "string", "pattern": "a", "maxLength": 3})", {"'pattern'"}},
      {R"({"type": "string", "format": "date", "minLength": 11})", {"'format'"}},
      {R"({"type": "string", "format": "date-time", "maxLength": 30})", {"'format'"}},
      {R"({"type": "string", "pattern": "(a)\\1"})", {"'pattern'", "backreference", "position 3"}},
      {R"j({"type": "string", "pattern": "(?=a)"})j", {"lookaround", "position 0"}},
      {R"({"enum": ["ab", "cd"], "pattern": "a"})", {"'pattern'", "enum"}},
      {R"({"allOf": [{"pattern": "a"}, {"pattern": "b"}]})", {"allOf", "'pattern'"}},
      {R"({"$ref": "http://example.com/schema"})", {"'$ref'", "local"}},
      {R"({"$ref": "#/$defs/missing"})", {"'$ref'", "#/$defs/missing"}},
      {R"({"$ref": "#foo"})", {"'$ref'", "anchors"}},
      {R"({"unevaluatedProperties": {"type": "string"}})", {"'unevaluatedProperties'"}},
  };
  for (const refusal& c : cases) expect_refused(c.schema, c.mentions);
}

TEST(JsonSchemaGbnf, RefusesWhatNothingSatisfies) {
  expect_refused("false", {"false"});
  expect_refused(R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", {"'required'", "'a'"});
  expect_refused(R"({"type": "object", "properties": {"a": {}}, "required": ["b"], "additionalProperties": false})", {"'b'"});
  expect_refused(R"({"type": "string", "minLength": 5, "maxLength": 2})", {"'minLength'", "5"});
  expect_refused(R"({"type": "integer", "minimum": 5, "maximum": 4})", {"no integer"});
  expect_refused(R"({"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 4})", {"no integer"});
  expect_refused(R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})", {"'minItems'"});
  expect_refused(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})", {"no value"});
  expect_refused(R"({"enum": [1, 2], "type": "string"})", {"no value"});
  expect_refused(R"({"enum": ["a", "bcd"], "maxLength": 2, "minLength": 2})", {"enum"});
  expect_refused(R"({"type": "object", "properties": {"a": {"anyOf": [false, false]}}})", {"#/properties/a"});
}

TEST(JsonSchemaGbnf, RefusesMalformedSchemas) {
  const std::vector<refusal> cases = {
      {"42", {"object or a boolean", "42"}},
      {R"("string")", {"object or a boolean"}},
      {"null", {"object or a boolean"}},
      {"[]", {"object or a boolean"}},
      {R"({"type": "strnig"})", {"'type'", "strnig"}},
      {R"({"type": []})", {"'type'"}},
      {R"({"type": 5})", {"'type'"}},
      {R"({"minLength": "5"})", {"'minLength'", "\"5\""}},
      {R"({"maxItems": -1})", {"'maxItems'", "-1"}},
      {R"({"minItems": 1.5})", {"'minItems'", "1.5"}},
      {R"({"required": "a"})", {"'required'"}},
      {R"({"required": [1]})", {"'required'"}},
      {R"({"properties": []})", {"'properties'"}},
      {R"({"properties": {"a": 5}})", {"'properties'", "'a'"}},
      {R"({"additionalProperties": "no"})", {"'additionalProperties'"}},
      {R"({"items": 3})", {"'items'"}},
      {R"({"prefixItems": {}})", {"'prefixItems'"}},
      {R"({"enum": 5})", {"'enum'"}},
      {R"({"$ref": 5})", {"'$ref'"}},
      {R"({"allOf": {}})", {"'allOf'"}},
      {R"({"anyOf": []})", {"'anyOf'"}},
      {R"({"oneOf": [3]})", {"'oneOf'"}},
      {R"({"minimum": "0"})", {"'minimum'"}},
      {R"({"pattern": 7})", {"'pattern'"}},
      {R"({"format": 7})", {"'format'"}},
      {R"({"multipleOf": 0})", {"'multipleOf'"}},
      {R"({"exclusiveMinimum": true})", {"'exclusiveMinimum'"}},
      {R"({"type": "object", "properties": {"a": {"properties": {"b": {"minLength": {}}}}}})",
       {"'minLength'", "#/properties/a/properties/b"}},
      {R"({"$defs": {"a~b/c": {"type": "xyz"}}, "$ref": "#/$defs/a~0b~1c"})", {"'type'", "#/$defs/a~0b~1c"}},
  };
  for (const refusal& c : cases) expect_refused(c.schema, c.mentions);
}

std::string nested(const std::string& open, const std::string& inner, const std::string& close, int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(JsonSchemaGbnf, RefusesHostileSizesQuickly) {
  const double start = test::thread_cpu_seconds();
  // Deep documents: refused before any recursion (the lead's parser or ours) could overflow.
  expect_refused(nested(R"({"type": "object", "properties": {"a": )", "{}", "}}", 100000), {"nest"});
  expect_refused(nested(R"({"anyOf": [)", "{}", "]}", 5000), {"nest"});
  expect_refused(nested(R"({"items": )", "{}", "}", 180), {"nest"});
  expect_refused(R"({"type": "array", "minItems": 1000000000})", {"'minItems'", "1000000000"});
  // A maximum past the limit is generated as the limit (shorter is as valid); a minimum cannot be.
  for (const char* capped : {R"({"type": "array", "maxItems": 1000000000, "minItems": 5})", R"({"type": "string", "maxLength": 1000000000000})"}) {
    auto g = json_schema_to_gbnf(ojson::parse(capped));
    EXPECT_TRUE(g.is_ok()) << capped << ": " << g.message();
  }
  expect_refused(R"({"type": "string", "minLength": 99999999999999999999999})", {"'minLength'"});
  expect_refused(R"({"type": "string", "pattern": "a{1000000}"})", {"'pattern'", "limit"});
  expect_refused(R"({"type": "string", "pattern": "((a{500}){500}){500}"})", {"'pattern'"});
  expect_refused(R"({"$ref": "#"})", {"'$ref'", "refers back"});
  expect_refused(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})", {"refers back"});
  expect_refused(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})", {"refers back"});
  // anyOf alternatives multiply when distributed: 8 x 8 x 8 branches.
  std::string branches = "[";
  for (int i = 0; i < 8; ++i) branches += std::string(i ? "," : "") + "{\"minLength\": " + std::to_string(i) + "}";
  branches += "]";
  expect_refused(R"({"allOf": [{"anyOf": )" + branches + R"(}, {"anyOf": )" + branches + R"(}, {"anyOf": )" + branches + "}]}",
                 {"alternatives"});
  // Counts that are each within the limit but unroll to too much together.
  std::string many = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 100; ++i) many += fmt::format("{}\"s{}\": {{\"maxLength\": {}}}", i ? ", " : "", i, 9000 + i);
  expect_refused(many + "}}", {"unroll"});
  // An enum value nested past what one rule's groups may hold.
  expect_refused(R"({"const": )" + nested("[", "1", "]", 100) + "}", {"nests deeper"});
  // Lists past their limits.
  ojson props = ojson::object();
  for (int i = 0; i < 2001; ++i) props["p" + std::to_string(i)] = ojson::object();
  expect_refused(ojson{{"properties", props}}.dump(), {"'properties'", "2000"});
  ojson values = ojson::array();
  for (int i = 0; i < 10001; ++i) values.push_back(i);
  expect_refused(ojson{{"enum", values}}.dump(), {"'enum'", "10000"});
  ojson tuple = ojson::array();
  for (int i = 0; i < 129; ++i) tuple.push_back(ojson::object());
  expect_refused(ojson{{"type", "array"}, {"prefixItems", tuple}}.dump(), {"'prefixItems'", "128"});
  ojson long_names = ojson::object();
  for (int i = 0; i < 30; ++i) long_names[std::string(1000, char('a' + i % 26)) + std::to_string(i)] = ojson::object();
  expect_refused(ojson{{"properties", long_names}, {"additionalProperties", true}}.dump(), {"characters"});
  ojson big_values = ojson::array();
  for (int i = 0; i < 9000; ++i) big_values.push_back(std::to_string(i) + std::string(1000, 'v'));
  expect_refused(ojson{{"enum", big_values}}.dump(), {"bytes"});
  // Recursion that only nests: accepted, a finite grammar.
  EXPECT_TRUE(schema_grammar_text(R"({"type": "object", "properties": {"a": {"$ref": "#"}, "b": {"items": {"$ref": "#"}}}})"));
  EXPECT_LT(test::thread_cpu_seconds() - start, 20.0);
}

TEST(JsonSchemaGbnf, LargeButReasonableSchemasConvert) {
  // 300 properties, an enum of 2000 values, a 64-bit-wide integer range, long strings.
  ojson props = ojson::object();
  for (int i = 0; i < 300; ++i) props["p" + std::to_string(i)] = {{"type", i % 2 ? "integer" : "string"}};
  ojson values = ojson::array();
  for (int i = 0; i < 2000; ++i) values.push_back("v" + std::to_string(i));
  ojson schema = {{"type", "object"},
                  {"properties", props},
                  {"required", {"p0", "p299"}},
                  {"additionalProperties", {{"type", "string"}, {"maxLength", 2000}}}};
  schema["properties"]["choice"] = {{"enum", values}};
  schema["properties"]["big"] = {{"type", "integer"}, {"minimum", INT64_MIN}, {"maximum", UINT64_MAX}};
  auto g = schema_grammar(schema);
  ASSERT_TRUE(g);
  EXPECT_TRUE(matches(*g, R"({"p0": "x", "p299": 5})"));
  EXPECT_TRUE(matches(*g, R"({"p0": "x", "p7": 3, "p299": 5, "choice": "v1999", "p300": "extra"})"));
  EXPECT_FALSE(matches(*g, R"({"p0": "x", "p299": 5, "p7": 3})"));  // order, and p7 is not extra
  EXPECT_FALSE(matches(*g, R"({"p0": "x", "p299": 5, "p1": "s"})"));
}

TEST(JsonSchemaGbnf, ErrorsNeverThrowForBuiltValues) {
  // A schema built in code may hold a string that is not UTF-8 (parsed JSON cannot).
  ojson schema = {{"enum", {std::string("\xff\xfe")}}};
  auto r = json_schema_to_gbnf(schema);
  EXPECT_FALSE(r.is_ok());
  ojson key_schema = {{"type", "object"}, {"properties", {{std::string("\xc3"), ojson::object()}}}};
  EXPECT_FALSE(json_schema_to_gbnf(key_schema).is_ok());
}

}  // namespace
}  // namespace glia::grammar::json_schema_test
