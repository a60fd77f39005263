// GBNF rules for the string formats the JSON Schema converter asserts: date, time, date-time (RFC
// 3339, as Python's jsonschema checks them) and uuid. Other formats are annotations (2020-12's
// default) and are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glia::grammar {

struct gbnf_rule_text {
  std::string name;
  std::string body;
  std::vector<std::string> uses;  // other rules of this table the body refers to
};

// The rules of the supported formats and their helpers; a format's rule is named as the format and
// matches the string's contents (between the quotes; none of them needs a JSON escape).
const std::vector<gbnf_rule_text>& format_rules();
bool is_supported_format(std::string_view format);
// The shortest and longest strings a supported format's rule writes, so that a minLength/maxLength
// beside it can be seen to change nothing.
std::pair<uint64_t, uint64_t> format_length_range(std::string_view format);

}  // namespace glia::grammar
