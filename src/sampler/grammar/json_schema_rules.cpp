#include "sampler/grammar/json_schema_rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "sampler/grammar/json_schema_chars.h"

namespace glia::grammar {
namespace rules_detail {
namespace {

constexpr size_t max_rules = 20000;
constexpr size_t max_grammar_bytes = size_t(8) << 20;
constexpr size_t max_name_length = 60;

// `space` is the bounded whitespace between tokens (nothing, a space, or a newline and up to 20
// spaces/tabs, as llama.cpp's converter allows); `char` is one code point inside a JSON string in
// any of its spellings: a surrogate pair only as a pair, so each `char` is one code point. An
// integer has at most open_integer_digits digits; a number 16 before its point and 16 after (as
// llama.cpp's converter), and an exponent of at most two digits, so that every number is finite in
// a double (a three-digit one lets 1e999 through).
const std::vector<gbnf_rule_text>& primitive_rules() {
  static const std::vector<gbnf_rule_text> rules = [] {
    std::vector<gbnf_rule_text> r = {
        {"space", "( \" \" | \"\\n\" [ \\t]{0,20} )?", {}},
        {"char",
         "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}"
         " | [dD] [89abAB] [0-9a-fA-F]{2} \"\\\\u\" [dD] [c-fC-F] [0-9a-fA-F]{2} ) )",
         {}},
        {"string", "\"\\\"\" char* \"\\\"\"", {"char"}},
        {"integer", "\"-\"? ( \"0\" | [1-9] [0-9]{0,14} )", {}},
        {"number", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?", {}},
        {"boolean", "\"true\" | \"false\"", {}},
        {"null", "\"null\"", {}},
        {"value", "object | array | string | number | boolean | null",
         {"object", "array", "string", "number", "boolean", "null"}},
        {"object",
         "\"{\" space ( string space \":\" space value space ( \",\" space string space \":\" space value space )* )? \"}\"",
         {"space", "string", "value"}},
        {"array", "\"[\" space ( value space ( \",\" space value space )* )? \"]\"", {"space", "value"}},
    };
    for (const gbnf_rule_text& f : format_rules()) r.push_back(f);
    return r;
  }();
  return rules;
}

}  // namespace
}  // namespace rules_detail

const gbnf_rule_text* find_schema_primitive(std::string_view name) {
  for (const gbnf_rule_text& r : rules_detail::primitive_rules())
    if (r.name == name) return &r;
  return nullptr;
}

gbnf_rule_book::gbnf_rule_book() {
  taken_.insert("root");
  for (const gbnf_rule_text& r : rules_detail::primitive_rules()) taken_.insert(r.name);
}

result<std::string> gbnf_rule_book::claim(std::string_view hint) {
  if (order_.size() >= rules_detail::max_rules)
    return make_error("json schema: the grammar needs over {} rules", rules_detail::max_rules);
  std::string base;
  for (char c : hint) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && std::isalnum(u)) {
      base += c;
    } else if (!base.empty() && base.back() != '-') {
      base += '-';
    }
  }
  if (base.size() > rules_detail::max_name_length) base.resize(rules_detail::max_name_length);
  while (!base.empty() && base.back() == '-') base.pop_back();
  if (base.empty()) base = "x";
  std::string name = base;
  for (int n = 2; taken_.count(name); ++n) name = fmt::format("{}-{}", base, n);
  taken_.insert(name);
  order_.push_back(name);
  return name;
}

void gbnf_rule_book::release(const std::string& name) { taken_.erase(name); }

status gbnf_rule_book::define(const std::string& name, std::string body) {
  bytes_ += name.size() + body.size() + 6;
  if (bytes_ > rules_detail::max_grammar_bytes)
    return make_error("json schema: the grammar grows past {} bytes", rules_detail::max_grammar_bytes);
  if (!taken_.count(name) || name == "root" || find_schema_primitive(name)) order_.push_back(name);
  bodies_[name] = std::move(body);
  return status::ok();
}

std::string gbnf_rule_book::use(const std::string& primitive) {
  if (!defined(primitive)) {
    const gbnf_rule_text* r = find_schema_primitive(primitive);
    (void)define(primitive, r->body);  // a few fixed bytes: the size limit is checked elsewhere
    for (const std::string& dep : r->uses) use(dep);
  }
  return primitive;
}

std::string gbnf_rule_book::text() const {
  std::string out;
  std::set<std::string> written;
  auto emit = [&](const std::string& name) {
    auto it = bodies_.find(name);
    if (it != bodies_.end() && written.insert(name).second) out += name + " ::= " + it->second + "\n";
  };
  emit("root");
  for (const std::string& name : order_) emit(name);
  return out;
}

std::string gbnf_join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::string gbnf_seq(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += ' ';
    out += p;
  }
  return out;
}

std::string gbnf_group(const std::string& expr) { return gbnf_needs_group(expr) ? "(" + expr + ")" : expr; }

std::string gbnf_alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::vector<std::string> parts;
  for (const std::string& a : alts) parts.push_back(a.find('|') == std::string::npos ? a : "(" + a + ")");
  return gbnf_join(parts, " | ");
}

std::string gbnf_repeat(const std::string& expr, uint64_t lo, int64_t hi) {
  if (hi == 0) return "";
  const std::string g = gbnf_group(expr);
  if (hi < 0) {
    if (lo == 0) return g + "*";
    if (lo == 1) return g + "+";
    return fmt::format("{}{{{},}}", g, lo);
  }
  if (lo == 0 && hi == 1) return g + "?";
  if (lo == 1 && hi == 1) return expr;
  if (int64_t(lo) == hi) return fmt::format("{}{{{}}}", g, lo);
  return fmt::format("{}{{{},{}}}", g, lo, hi);
}

}  // namespace glia::grammar
