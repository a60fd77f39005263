// Assembling the GBNF text the JSON Schema converter writes: the shared rules (whitespace, JSON
// strings, numbers, any value, the formats), readable unique rule names, and small helpers for
// sequences, alternatives and repetitions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sampler/grammar/json_schema_formats.h"

namespace glia::grammar {

// Shared rules by name (space, char, string, integer, number, boolean, null, value, object, array,
// and the formats'); nullptr for other names.
const gbnf_rule_text* find_schema_primitive(std::string_view name);

// Rule names and bodies, written root first and then in order of creation. Names come from hints
// (property paths), reduced to [a-zA-Z0-9-] and made unique with -2, -3, ...; the shared rules'
// names and "root" are reserved.
class gbnf_rule_book {
 public:
  gbnf_rule_book();

  result<std::string> claim(std::string_view hint);
  void release(const std::string& name);  // a claimed name that will not be defined
  status define(const std::string& name, std::string body);
  bool defined(const std::string& name) const { return bodies_.count(name) > 0; }
  // Defines a shared rule (and those it uses) the first time; returns its name.
  std::string use(const std::string& primitive);
  std::string text() const;

 private:
  std::set<std::string> taken_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> bodies_;
  size_t bytes_ = 0;
};

std::string gbnf_join(const std::vector<std::string>& parts, std::string_view separator);
// Space-separated, skipping empty parts.
std::string gbnf_seq(std::initializer_list<std::string> parts);
// `expr` in parentheses unless it is a single literal, class, name or group.
std::string gbnf_group(const std::string& expr);
// Alternatives, each parenthesised where it holds a '|' of its own.
std::string gbnf_alternatives(const std::vector<std::string>& alts);
// `expr` repeated lo..hi times (hi < 0: without bound); "" for none.
std::string gbnf_repeat(const std::string& expr, uint64_t lo, int64_t hi);

}  // namespace glia::grammar
