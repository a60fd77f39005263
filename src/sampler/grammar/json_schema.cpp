#include "sampler/grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "sampler/grammar/json_schema_chars.h"
#include "sampler/grammar/json_schema_enum.h"
#include "sampler/grammar/json_schema_formats.h"
#include "sampler/grammar/json_schema_merge.h"
#include "sampler/grammar/json_schema_numbers.h"
#include "sampler/grammar/json_schema_rules.h"

namespace glia::grammar {
namespace schema_detail {
namespace {

constexpr int max_document_depth = 256;       // JSON nesting of the schema document itself
constexpr size_t max_document_nodes = 2000000;
constexpr int max_value_depth = 100;          // values generated inside values
constexpr size_t max_listed_properties = 2000;
constexpr size_t max_prefix_items = 128;  // each nests a group in the array's rule
// Copies the repetitions ({m,n} of string characters and array items) unroll to when the grammar
// is compiled, all together; past it a schema is refused here rather than by the parser.
constexpr uint64_t max_unrolled_elements = 600000;
constexpr size_t max_enum_values = 10000;
constexpr size_t max_excluded_key_chars = 20000;  // names extra properties must differ from

// floor or ceil of a JSON number as an exact integer, clamped just past what integers may spell.
int128 rounded_bound(const ojson& v, bool up) {
  const int128 beyond = max_integer_magnitude() + 1;
  if (v.is_number_unsigned()) return std::min<int128>(int128(v.get<uint64_t>()), beyond);
  if (v.is_number_integer()) return int128(v.get<int64_t>());
  const long double d = json_number_value(v);
  if (d > 1e30L) return beyond;
  if (d < -1e30L) return -beyond;
  return int128(up ? std::ceil(d) : std::floor(d));
}

bool has_any(const ojson& kw, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (kw.contains(k)) return true;
  return false;
}

constexpr std::initializer_list<const char*> object_keywords = {"properties", "required", "additionalProperties",
                                                                "minProperties", "maxProperties"};
constexpr std::initializer_list<const char*> array_keywords = {"items", "prefixItems", "minItems", "maxItems",
                                                               "uniqueItems"};
constexpr std::initializer_list<const char*> string_keywords = {"minLength", "maxLength", "pattern", "format"};
constexpr std::initializer_list<const char*> number_keywords = {"minimum", "maximum", "exclusiveMinimum",
                                                                "exclusiveMaximum"};

error keyword_error(std::string_view keyword, const std::string& path, std::string_view what) {
  return make_error("json schema: keyword '{}' at {} {}", keyword, schema_location(path), what);
}

template <typename Json>
status check_document_size(const Json& doc) {
  std::vector<std::pair<const Json*, int>> stack{{&doc, 0}};
  size_t nodes = 0;
  while (!stack.empty()) {
    auto [j, depth] = stack.back();
    stack.pop_back();
    if (++nodes > max_document_nodes)
      return make_error("json schema: the schema has over {} JSON values", max_document_nodes);
    if (depth > max_document_depth)
      return make_error("json schema: the schema nests deeper than {} levels", max_document_depth);
    if (j->is_object() || j->is_array())
      for (const auto& child : *j) stack.emplace_back(&child, depth + 1);
  }
  return status::ok();
}

class converter {
 public:
  explicit converter(const ojson& root) : root_(root), flattener_(root) {}

  result<std::string> run() {
    if (root_.is_boolean() && !root_.get<bool>())
      return make_error("json schema: the schema is false: no value satisfies it");
    GLIA_ASSIGN(std::string top, value(root_, "", "top"));
    GLIA_TRY(rules_.define("root", top + " " + use("space")));
    return rules_.text();
  }

 private:
  // A rule for the values `schema` accepts (memoised: a recursive $ref meets its own rule).
  result<std::string> value(const ojson& schema, const std::string& path, const std::string& hint) {
    if (depth_ >= max_value_depth)
      return make_error("json schema: values nest deeper than {} levels at {}", max_value_depth, schema_location(path));
    const std::string key = schema.dump();
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    GLIA_ASSIGN(std::vector<flat_schema> alts, flattener_.flatten(schema, path));
    if (alts.empty()) return make_error("json schema: no value satisfies the schema at {}", schema_location(path));
    if (alts.size() == 1) {  // the same alternative reached another way (a $ref spelled otherwise)
      if (auto it = flat_memo_.find(alts[0].keywords.dump()); it != flat_memo_.end()) {
        memo_[key] = it->second;
        return it->second;
      }
    }
    GLIA_ASSIGN(std::string name, rules_.claim(name_hint(schema, hint)));
    memo_[key] = name;
    if (alts.size() == 1) flat_memo_[alts[0].keywords.dump()] = name;
    ++depth_;
    auto bodies = alternative_bodies(alts, name);
    --depth_;
    if (!bodies.is_ok()) return bodies.take_error();
    // A bare shared rule (string, value, ...) needs no alias; nothing can have referred to `name`
    // yet, as such a rule contains no nested schema.
    if (bodies->size() == 1 && find_schema_primitive((*bodies)[0])) {
      rules_.release(name);
      memo_[key] = (*bodies)[0];
      if (alts.size() == 1) flat_memo_[alts[0].keywords.dump()] = (*bodies)[0];
      return (*bodies)[0];
    }
    GLIA_TRY(rules_.define(name, gbnf_join(*bodies, " | ")));
    return name;
  }

  // Each alternative's expression; with several, any but the shortest get rules of their own,
  // shared with every other place the same alternative occurs (an optional $ref'd object, say).
  result<std::vector<std::string>> alternative_bodies(const std::vector<flat_schema>& alts, const std::string& name) {
    std::vector<std::string> bodies;
    for (size_t i = 0; i < alts.size(); ++i) {
      std::string body;
      if (alts.size() == 1) {
        GLIA_ASSIGN(body, flat_expr(alts[i], name));
      } else {
        const std::string flat_key = alts[i].keywords.dump();
        if (auto it = flat_memo_.find(flat_key); it != flat_memo_.end()) {
          body = it->second;
        } else {
          GLIA_ASSIGN(std::string rule, rules_.claim(fmt::format("{}-{}", name, i + 1)));
          flat_memo_[flat_key] = rule;
          GLIA_ASSIGN(body, flat_expr(alts[i], rule));
          if (body.find(' ') == std::string::npos) {  // a primitive or a single token: inline
            rules_.release(rule);
            flat_memo_[flat_key] = body;
          } else {
            GLIA_TRY(rules_.define(rule, body));
            body = rule;
          }
        }
      }
      if (std::find(bodies.begin(), bodies.end(), body) == bodies.end()) bodies.push_back(body);
    }
    return bodies;
  }

  // Rules for {"$ref": "#/$defs/node"} are named after the definition.
  static std::string name_hint(const ojson& schema, const std::string& hint) {
    if (!schema.is_object() || !schema.contains("$ref") || !schema["$ref"].is_string()) return hint;
    const std::string ref = schema["$ref"].get<std::string>();
    const size_t slash = ref.rfind('/');
    const std::string last = slash == std::string::npos ? "" : ref.substr(slash + 1);
    return last.empty() ? hint : last;
  }

  std::string use(const std::string& primitive) { return rules_.use(primitive); }

  std::string child_hint(const std::string& parent, std::string_view part) const {
    return parent == "top" ? std::string(part) : parent + "-" + std::string(part);
  }

  result<std::string> flat_expr(const flat_schema& f, const std::string& hint) {
    const ojson& kw = f.keywords;
    std::vector<std::string> types;
    if (kw.contains("type")) {
      for (const auto& t : kw["type"]) types.push_back(t.get<std::string>());
    } else if (!kw.contains("enum")) {
      // No type: values of other types would be valid too; generating only the kinds the keywords
      // describe is a subset, which keeps the output on the schema's intent.
      if (has_any(kw, object_keywords)) types.push_back("object");
      if (has_any(kw, array_keywords)) types.push_back("array");
      if (has_any(kw, string_keywords)) types.push_back("string");
      if (has_any(kw, number_keywords)) types.push_back("number");
      if (types.empty()) return use("value");
    }
    if (kw.contains("enum")) return enum_expr(kw, types, f.path);
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<std::string> alts;
    for (const std::string& t : types) {
      std::string e;
      if (t == "null" || t == "boolean") {
        e = use(t);
      } else if (t == "object") {
        GLIA_ASSIGN(e, object_expr(kw, f.path, hint));
      } else if (t == "array") {
        GLIA_ASSIGN(e, array_expr(kw, f.path, hint));
      } else if (t == "string") {
        GLIA_ASSIGN(e, string_expr(kw, f.path));
      } else if (t == "number") {
        GLIA_ASSIGN(e, number_expr(kw, f.path));
      } else if (t == "integer") {
        if (has_number) continue;  // integers are numbers
        GLIA_ASSIGN(e, integer_expr(kw, f.path));
      }
      if (std::find(alts.begin(), alts.end(), e) == alts.end()) alts.push_back(e);
    }
    return gbnf_alternatives(alts);
  }

  // ---- objects ----

  struct listed_property {
    std::string name;
    std::string value_rule;
    bool required = false;
  };

  result<std::string> object_expr(const ojson& kw, const std::string& path, const std::string& hint) {
    static const ojson none = ojson::object();
    const ojson& props = kw.contains("properties") ? kw["properties"] : none;
    std::vector<std::string> required;
    if (kw.contains("required"))
      for (const auto& r : kw["required"]) required.push_back(r.get<std::string>());
    auto is_required = [&](const std::string& k) {
      return std::find(required.begin(), required.end(), k) != required.end();
    };
    const ojson* additional = kw.contains("additionalProperties") ? &kw["additionalProperties"] : nullptr;
    const bool forbid_extra = additional ? (additional->is_boolean() && !additional->get<bool>())
                                         : kw.contains("properties");  // absent with properties: none, as llama.cpp
    // Distinct names: a required property is usually listed in properties too.
    const size_t unlisted_required = size_t(std::count_if(required.begin(), required.end(), [&](const std::string& r) { return !props.contains(r); }));
    if (props.size() + unlisted_required > max_listed_properties)
      return keyword_error("properties", path, fmt::format("lists over {} properties", max_listed_properties));

    std::vector<listed_property> listed;
    std::vector<std::u32string> listed_names;
    for (auto it = props.begin(); it != props.end(); ++it) {
      const std::string& k = it.key();
      if (it.value().is_boolean() && !it.value().get<bool>()) {  // must be absent
        if (is_required(k))
          return keyword_error("required", path, fmt::format("names '{}', whose schema is false", k));
        listed_names.push_back(decoded(k));
        continue;
      }
      GLIA_ASSIGN(std::string rule, value(it.value(), path + "/properties/" + json_pointer_escape(k), child_hint(hint, k)));
      listed.push_back({k, rule, is_required(k)});
      listed_names.push_back(decoded(k));
    }
    for (const std::string& k : required) {
      if (props.contains(k)) continue;
      if (additional && additional->is_boolean() && !additional->get<bool>())
        return keyword_error("required", path, fmt::format("names '{}', which additionalProperties false forbids", k));
      const ojson& schema = additional && additional->is_object() ? *additional : ojson(true);
      GLIA_ASSIGN(std::string rule, value(schema, path + "/additionalProperties", child_hint(hint, k)));
      listed.push_back({k, rule, true});
      listed_names.push_back(decoded(k));
    }
    size_t n_required = 0;
    for (const listed_property& p : listed) n_required += p.required;

    std::string extra_kv;
    if (!forbid_extra) {
      std::string extra_value = use("value");
      if (additional && additional->is_object()) {
        GLIA_ASSIGN(extra_value, value(*additional, path + "/additionalProperties", child_hint(hint, "additional")));
      }
      GLIA_ASSIGN(std::string key, extra_key(listed_names, hint));
      GLIA_ASSIGN(extra_kv, rules_.claim(child_hint(hint, "additional-kv")));
      GLIA_TRY(rules_.define(extra_kv, gbnf_seq({key, use("space"), "\":\"", use("space"), extra_value, use("space")})));
    }
    if (kw.contains("minProperties") && kw["minProperties"].get<uint64_t>() > n_required)
      return keyword_error("minProperties", path, fmt::format("= {} is only supported when the required properties meet it", brief_json(kw["minProperties"])));
    if (kw.contains("maxProperties") && (!extra_kv.empty() || kw["maxProperties"].get<uint64_t>() < listed.size()))
      return keyword_error("maxProperties", path, fmt::format("= {} is only supported when the listed properties and no others meet it", brief_json(kw["maxProperties"])));

    const std::string sp = use("space");
    auto kv = [&](const listed_property& p) {
      return gbnf_seq({gbnf_literal(U"\"" + json_escaped(decoded(p.name)) + U"\""), sp, "\":\"", sp, p.value_rule, sp});
    };
    const std::string comma = "\",\" " + sp;
    const size_t n = listed.size();
    const std::string extras_tail = extra_kv.empty() ? "" : "(" + comma + " " + extra_kv + ")*";
    if (n == 0) {
      if (extra_kv.empty()) return gbnf_seq({"\"{\"", sp, "\"}\""});
      return gbnf_seq({"\"{\"", sp, "(" + gbnf_seq({extra_kv, extras_tail}) + ")?", "\"}\""});
    }
    if (n_required == n && extra_kv.empty()) {  // a fixed sequence
      std::vector<std::string> parts{"\"{\"", sp};
      for (size_t i = 0; i < n; ++i) {
        if (i) parts.push_back(comma);
        parts.push_back(kv(listed[i]));
      }
      parts.push_back("\"}\"");
      return gbnf_join(parts, " ");
    }
    // tail[j]: properties j.. each preceded by a comma (optional ones skippable), then the extras.
    // The first property written is any optional one before the first required one, or that one.
    size_t first_required = n;
    for (size_t i = 0; i < n; ++i)
      if (listed[i].required) {
        first_required = i;
        break;
      }
    const size_t last_first = first_required == n ? n - 1 : first_required;
    std::vector<std::string> tail(n + 1);
    tail[n] = extras_tail;
    for (size_t j = n - 1; j >= 1; --j) {
      const std::string item = gbnf_seq({comma, kv(listed[j])});
      std::string body = listed[j].required ? gbnf_seq({item, tail[j + 1]}) : gbnf_seq({"(" + item + ")?", tail[j + 1]});
      // Referred to from tail[j-1] and from the alternative starting at j-1: a rule of its own.
      if (j >= 2 && j - 1 <= last_first) {
        GLIA_ASSIGN(std::string rule, rules_.claim(child_hint(hint, "after-" + listed[j - 1].name)));
        GLIA_TRY(rules_.define(rule, body));
        body = rule;
      }
      tail[j] = body;
    }
    std::vector<std::string> firsts;
    for (size_t i = 0; i <= last_first; ++i) firsts.push_back(gbnf_seq({kv(listed[i]), tail[i + 1]}));
    if (first_required == n && !extra_kv.empty()) firsts.push_back(gbnf_seq({extra_kv, extras_tail}));
    std::string inner = gbnf_join(firsts, " | ");
    if (firsts.size() > 1 || first_required == n) inner = "(" + inner + ")";
    if (first_required == n) inner += "?";
    return gbnf_seq({"\"{\"", sp, inner, "\"}\""});
  }

  static std::u32string decoded(const std::string& utf8) {
    std::u32string out;
    decode_utf8(utf8, out);  // keys come from parsed JSON: valid UTF-8
    return out;
  }

  // Names of extra properties: any string but the listed names (a trie: at each node, continue a
  // listed name, leave it with another character, or stop where no listed name ends).
  result<std::string> extra_key(const std::vector<std::u32string>& excluded, const std::string& hint) {
    if (excluded.empty()) return use("string");
    struct trie_node {
      std::map<char32_t, size_t> next;
      bool ends_name = false;
    };
    std::vector<trie_node> trie(1);
    size_t chars = 0;
    for (const std::u32string& name : excluded) {
      chars += name.size();
      if (chars > max_excluded_key_chars)
        return make_error("json schema: property names total over {} characters", max_excluded_key_chars);
      size_t at = 0;
      for (char32_t c : name) {
        auto it = trie[at].next.find(c);
        if (it == trie[at].next.end()) {
          trie.push_back({});
          it = trie[at].next.emplace(c, trie.size() - 1).first;
        }
        at = it->second;
      }
      trie[at].ends_name = true;
    }
    std::vector<std::string> names(trie.size());
    for (size_t i = 0; i < trie.size(); ++i) {
      GLIA_ASSIGN(names[i], rules_.claim(child_hint(hint, i == 0 ? "additional-key" : fmt::format("additional-key-{}", i))));
    }
    const std::string any_chars = use("char") + "*";
    for (size_t i = 0; i < trie.size(); ++i) {
      std::vector<std::string> alts;
      code_point_set others = code_point_set::all();
      for (auto [c, child] : trie[i].next) {
        alts.push_back(gbnf_seq({gbnf_literal(json_escaped(std::u32string(1, c))), names[child]}));
        others = others.minus(code_point_set::of(c));
      }
      alts.push_back(gbnf_seq({gbnf_json_string_set(others), any_chars}));
      std::string body = gbnf_join(alts, " | ");
      if (!trie[i].ends_name) body = "(" + body + ")?";
      GLIA_TRY(rules_.define(names[i], body));
    }
    return gbnf_seq({"\"\\\"\"", names[0], "\"\\\"\""});
  }

  // ---- arrays ----

  result<std::string> array_expr(const ojson& kw, const std::string& path, const std::string& hint) {
    const uint64_t min_items = kw.contains("minItems") ? kw["minItems"].get<uint64_t>() : 0;
    uint64_t max_items = kw.contains("maxItems") ? kw["maxItems"].get<uint64_t>() : UINT64_MAX;
    if (kw.contains("uniqueItems") && max_items > 1)
      return keyword_error("uniqueItems", path, "is only supported with maxItems <= 1");
    const ojson prefix = kw.contains("prefixItems") ? kw["prefixItems"] : ojson::array();
    size_t k = prefix.size();
    for (size_t i = 0; i < prefix.size(); ++i)
      if (prefix[i].is_boolean() && !prefix[i].get<bool>()) {  // nothing may stand at i: the array ends before
        k = i;
        max_items = std::min<uint64_t>(max_items, i);
        break;
      }
    // What may follow the prefix: "items", or (absent) nothing after a prefix, anything without one.
    std::optional<ojson> extra;
    if (kw.contains("items")) {
      if (!(kw["items"].is_boolean() && !kw["items"].get<bool>())) extra = kw["items"];
    } else if (k == 0 || min_items > k) {
      extra = ojson(true);
    }
    if (!extra) max_items = std::min<uint64_t>(max_items, k);
    if (min_items > max_items)
      return keyword_error("minItems", path, fmt::format("= {} cannot be met: at most {} items are allowed", min_items, max_items));
    const bool bounded = max_items != UINT64_MAX;
    if (k > max_prefix_items)
      return keyword_error("prefixItems", path, fmt::format("lists {} schemas, over the limit of {}", k, max_prefix_items));
    const size_t present = size_t(std::min<uint64_t>(k, max_items));  // prefix positions that can exist
    // Repetitions of the items after the prefix (after the first item when there is no prefix).
    const uint64_t skip = present == 0 ? 1 : present;
    const uint64_t repeat_lo = min_items > skip ? min_items - skip : 0;
    if (repeat_lo > regex_max_repeat)
      return keyword_error("minItems", path, fmt::format("= {} is over the limit of {}", min_items, regex_max_repeat + skip));
    // A maxItems past the limit is generated as the limit: shorter arrays are as valid, and schemas
    // written for storage limits (maxItems 65535) are common.
    const uint64_t repeat_hi = std::min<uint64_t>(bounded && max_items > skip ? max_items - skip : 0, regex_max_repeat);
    const std::string sp = use("space");
    const std::string comma = "\",\" " + sp;
    std::string extra_rule;
    if (extra) {
      GLIA_ASSIGN(extra_rule, value(*extra, path + "/items", child_hint(hint, "item")));
    }
    if (max_items == 0) return gbnf_seq({"\"[\"", sp, "\"]\""});
    GLIA_TRY(charge_repetition(path, 5, repeat_lo, bounded ? int64_t(repeat_hi) : -1));
    if (present == 0) {
      const int64_t hi = bounded ? int64_t(repeat_hi) : -1;
      std::string inner = gbnf_seq({extra_rule, sp, gbnf_repeat(gbnf_seq({comma, extra_rule, sp}), repeat_lo, hi)});
      if (min_items == 0) inner = "(" + inner + ")?";
      return gbnf_seq({"\"[\"", sp, inner, "\"]\""});
    }
    std::string rest;
    if (extra && (!bounded || max_items > present))
      rest = gbnf_repeat(gbnf_seq({comma, extra_rule, sp}), repeat_lo, bounded ? int64_t(repeat_hi) : -1);
    for (size_t i = present; i-- > 0;) {
      GLIA_ASSIGN(std::string element, value(prefix[i], fmt::format("{}/prefixItems/{}", path, i), child_hint(hint, std::to_string(i))));
      const std::string part = gbnf_seq({element, sp, rest});
      if (i == 0) {
        rest = part;
      } else {
        rest = gbnf_seq({comma, part});
        if (i >= min_items) rest = "(" + rest + ")?";
      }
    }
    if (min_items == 0) rest = "(" + rest + ")?";
    return gbnf_seq({"\"[\"", sp, rest, "\"]\""});
  }

  // Counts the elements a repetition of `unit_elements` unrolls to (the parser writes out every
  // copy), refusing once all of them together pass the budget.
  status charge_repetition(const std::string& path, uint64_t unit_elements, uint64_t lo, int64_t hi) {
    const uint64_t copies = hi < 0 ? lo + 1 : uint64_t(hi);
    unrolled_ += copies * (unit_elements + 1);
    if (unrolled_ > max_unrolled_elements)
      return make_error("json schema: the lengths and item counts up to {} unroll to over {} grammar elements in all",
                        schema_location(path), max_unrolled_elements);
    return status::ok();
  }

  // ---- scalars ----

  result<std::string> string_expr(const ojson& kw, const std::string& path) {
    const std::string quote = "\"\\\"\"";
    const bool has_length = kw.contains("minLength") || kw.contains("maxLength");
    if (kw.contains("format")) {
      const std::string format = kw["format"].get<std::string>();
      const auto [shortest, longest] = format_length_range(format);
      const bool lengths_hold = (!kw.contains("minLength") || kw["minLength"].get<uint64_t>() <= shortest) &&
                                (!kw.contains("maxLength") || kw["maxLength"].get<uint64_t>() >= longest);
      if (kw.contains("pattern") || !lengths_hold)
        return keyword_error("format", path, "together with 'pattern' or a length it does not already meet is not supported");
      return gbnf_seq({quote, use(format), quote});
    }
    if (kw.contains("pattern")) {
      if (has_length) return keyword_error("pattern", path, "together with minLength/maxLength is not supported");
      auto body = regex_json_string_body(kw["pattern"].get<std::string>(), use("char"));
      if (!body.is_ok())
        return make_error("json schema: keyword 'pattern' at {} = {}: {}", schema_location(path), brief_json(kw["pattern"]), body.message());
      return gbnf_seq({quote, *body, quote});
    }
    if (!has_length) return use("string");
    const uint64_t lo = kw.contains("minLength") ? kw["minLength"].get<uint64_t>() : 0;
    const bool bounded = kw.contains("maxLength");
    const uint64_t max_len = bounded ? kw["maxLength"].get<uint64_t>() : 0;
    if (bounded && lo > max_len)
      return keyword_error("minLength", path, fmt::format("= {} is above maxLength {}: no string satisfies both", lo, max_len));
    if (lo > regex_max_repeat) return keyword_error("minLength", path, fmt::format("= {} is over the limit of {}", lo, regex_max_repeat));
    // A maxLength past the limit is generated as the limit: shorter strings are as valid, and
    // database-style schemas (maxLength 65535) are common.
    const uint64_t hi = std::min<uint64_t>(max_len, regex_max_repeat);
    if (bounded && hi == 0) return gbnf_seq({quote, quote});
    GLIA_TRY(charge_repetition(path, 1, lo, bounded ? int64_t(hi) : -1));
    return gbnf_seq({quote, gbnf_repeat(use("char"), lo, bounded ? int64_t(hi) : -1), quote});
  }

  result<std::string> integer_expr(const ojson& kw, const std::string& path) {
    if (!has_any(kw, number_keywords)) return use("integer");
    std::optional<int128> lower, upper;  // the schema's own bounds
    const auto tighten = [](std::optional<int128>& slot, int128 v, bool is_lower) {
      slot = !slot ? v : is_lower ? std::max(*slot, v) : std::min(*slot, v);
    };
    if (kw.contains("minimum")) tighten(lower, rounded_bound(kw["minimum"], true), true);
    if (kw.contains("exclusiveMinimum")) tighten(lower, rounded_bound(kw["exclusiveMinimum"], false) + 1, true);
    if (kw.contains("maximum")) tighten(upper, rounded_bound(kw["maximum"], false), false);
    if (kw.contains("exclusiveMaximum")) tighten(upper, rounded_bound(kw["exclusiveMaximum"], true) - 1, false);
    int128 lo = lower ? *lower : -open_integer_end(upper ? std::optional<int128>(-*upper) : std::nullopt);
    int128 hi = upper ? *upper : open_integer_end(lower);
    lo = std::max(lo, -max_integer_magnitude());
    hi = std::min(hi, max_integer_magnitude());
    if (lo > hi)
      return make_error("json schema: no integer satisfies the bounds at {} (from {} to {})", schema_location(path),
                        int128_to_string(lo), int128_to_string(hi));
    return integer_range_expr(lo, hi);
  }

  result<std::string> number_expr(const ojson& kw, const std::string& path) {
    if (!has_any(kw, number_keywords)) return use("number");
    // Bounds must be integers, and small enough that float rounding of a decimal near them cannot
    // land on the wrong side (an exclusive bound needs room for 6 fraction digits).
    std::optional<number_bound> lo, hi;
    bool any_exclusive = false;
    for (const char* k : number_keywords) {
      if (!kw.contains(k)) continue;
      const ojson& v = kw[k];
      const bool exclusive = k[0] == 'e';
      const long double limit = exclusive ? 4294967296.0L : 9007199254740992.0L;
      if (!json_number_is_integral(v) || std::fabs(json_number_value(v)) > limit)
        return keyword_error(k, path, fmt::format("= {} on a number is not supported (only integers up to {} in magnitude; use type integer for integer values)",
                                                  brief_json(v), exclusive ? "2^32" : "2^53"));
      any_exclusive |= exclusive;
      const number_bound b{rounded_bound(v, false), exclusive};
      const bool is_lower = std::string_view(k).find("inimum") != std::string_view::npos;
      std::optional<number_bound>& slot = is_lower ? lo : hi;
      const bool tighter = !slot || (is_lower ? (b.value > slot->value || (b.value == slot->value && b.exclusive))
                                              : (b.value < slot->value || (b.value == slot->value && b.exclusive)));
      if (tighter) slot = b;
    }
    const std::string e = decimal_range_expr(lo, hi, any_exclusive ? 6 : 16);
    if (e.empty()) return make_error("json schema: no number satisfies the bounds at {}", schema_location(path));
    return e;
  }

  // ---- enum / const ----

  result<std::string> enum_expr(const ojson& kw, const std::vector<std::string>& types, const std::string& path) {
    const ojson& values = kw["enum"];
    if (values.size() > max_enum_values)
      return keyword_error("enum", path, fmt::format("lists over {} values", max_enum_values));
    std::vector<std::string> alts;
    std::set<std::string> seen;
    for (const auto& v : values) {
      GLIA_ASSIGN(bool ok, enum_value_allowed(kw, types, v, path));
      if (!ok) continue;
      GLIA_ASSIGN(std::string lit, json_literal_expr(v, use("space"), path));
      if (seen.insert(lit).second) alts.push_back(std::move(lit));
    }
    if (alts.empty())
      return make_error("json schema: no value of enum/const at {} satisfies the schema's other keywords", schema_location(path));
    return gbnf_alternatives(alts);
  }

  const ojson& root_;
  schema_flattener flattener_;
  gbnf_rule_book rules_;
  std::map<std::string, std::string> memo_;       // schema text -> its rule
  std::map<std::string, std::string> flat_memo_;  // flat alternative's keywords -> its rule
  int depth_ = 0;
  uint64_t unrolled_ = 0;
};

result<std::string> convert_guarded(const ojson& schema) {
  try {
    GLIA_TRY(check_document_size(schema));
    converter c(schema);
    return c.run();
  } catch (const std::exception& e) {  // e.g. a string that is not UTF-8 in a built (unparsed) schema
    return make_error("json schema: {}", e.what());
  }
}

}  // namespace
}  // namespace schema_detail

result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  return schema_detail::convert_guarded(schema);
}

result<std::string> json_schema_to_gbnf(const nlohmann::json& schema) {
  try {
    GLIA_TRY(schema_detail::check_document_size(schema));
    return schema_detail::convert_guarded(ojson::parse(schema.dump()));
  } catch (const std::exception& e) {
    return make_error("json schema: {}", e.what());
  }
}

}  // namespace glia::grammar
