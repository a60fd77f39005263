// Regular expressions to GBNF, for vLLM's guided_regex and JSON Schema's "pattern".
//
// The subset is the one ECMAScript (JSON Schema's dialect) and Python's re (the usual validator's)
// read alike: literals; escapes \d \w \s \D \W \S \t \n \r \f \v \0 \xHH \uHHHH and escaped
// punctuation; classes [...] with ranges, negation and class escapes ([\b] is backspace); `.`;
// groups (...) and (?:...); alternation; quantifiers * + ? {m} {m,} {m,n} and their lazy forms
// (same strings); ^ and $ at the ends of the pattern (of each top-level alternative).
// Where the dialects differ the grammar takes only what both accept, so it is sound under either:
// \d and \w are ASCII; \s is the whitespace both know; \D and \W are the ASCII non-digits and
// non-word characters (Python's \d and \w are Unicode-wide); \S excludes what either calls
// whitespace; `.` excludes \n \r U+2028 U+2029; $ is the very end (Python's also matches before a
// final newline).
// Refused, with the position: backreferences, lookaround, named groups, inline flags and other
// (?...) groups, \b \B \A \Z, possessive quantifiers, {,n}, a class opening with `]`, and counts
// or sizes past the limits below.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace glia::grammar {

// Largest count in {m,n} (and largest minLength/maxLength/minItems/maxItems a schema may set).
inline constexpr uint32_t regex_max_repeat = 10000;

// A GBNF grammar whose root matches exactly the strings the regex fully matches (as Python's
// re.fullmatch; ^ and $ at the ends change nothing).
result<std::string> regex_to_gbnf(std::string_view regex);

// For JSON Schema "pattern": a GBNF expression for what lies between the quotes of a JSON string
// whose value the pattern finds a match in (patterns are not anchored: an end without ^ or $ may
// have any characters beyond it, each spelled by the rule `any_char_rule`). Characters the pattern
// matches are spelled as JSON writes them (json_schema_chars.h).
result<std::string> regex_json_string_body(std::string_view pattern, std::string_view any_char_rule);

}  // namespace glia::grammar
