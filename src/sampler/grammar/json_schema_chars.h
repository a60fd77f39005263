// Sets of Unicode code points written as GBNF, either as raw text (a regex over plain strings) or as
// the contents of a JSON string literal, where `"`, `\` and control characters must be escaped.
// Shared by the regex and the JSON Schema converters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glia::grammar {

inline constexpr uint32_t max_code_point = 0x10FFFF;

// A set of code points: sorted, disjoint, non-adjacent inclusive ranges. Surrogates (U+D800..DFFF)
// are never members: no UTF-8 text carries them.
class code_point_set {
 public:
  code_point_set() = default;
  static code_point_set of(uint32_t c) { return range(c, c); }
  static code_point_set range(uint32_t lo, uint32_t hi);
  static code_point_set all() { return range(0, max_code_point); }

  void add(uint32_t lo, uint32_t hi);
  void add(const code_point_set& other);
  code_point_set complement() const;
  code_point_set minus(const code_point_set& other) const;
  code_point_set intersect(const code_point_set& other) const;

  bool contains(uint32_t c) const;
  bool empty() const { return ranges_.empty(); }
  // The one member, or -1 when the set has none or several.
  int64_t single() const;
  uint64_t size() const;
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }
  bool operator==(const code_point_set&) const = default;

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// Decodes UTF-8 into code points; false on malformed input (overlong forms, surrogates, > U+10FFFF).
bool decode_utf8(std::string_view text, std::u32string& out);

// A GBNF "literal" matching exactly `text` (code points; non-ASCII written as \u / \U escapes so the
// grammar text is plain ASCII).
std::string gbnf_literal(std::u32string_view text);
std::string gbnf_literal_utf8(std::string_view utf8_text);  // `utf8_text` must be valid UTF-8
// A GBNF [class] (or [^class] when that is shorter) matching one code point of a non-empty set.
std::string gbnf_class(const code_point_set& set);
// One code point of `set` as raw text: a literal for a single member, else a class.
std::string gbnf_raw_set(const code_point_set& set);

// The JSON string-literal spelling of `text` (no surrounding quotes), as Python's
// json.dumps(ensure_ascii=False) and nlohmann's dump write it: \" \\ \b \f \n \r \t, \u00xx for other
// control characters, everything else as itself.
std::u32string json_escaped(std::u32string_view text);
// A GBNF expression for one code point of a non-empty `set` as it may appear inside a JSON string:
// members that need no escape as themselves, `"` and `\` escaped, `/` also as \/, control characters
// as their short escape or \u00XX (either case of hex). Each spelling decodes to exactly one member.
std::string gbnf_json_string_set(const code_point_set& set);

// Whether an expression must be parenthesised before a postfix operator is applied to it.
bool gbnf_needs_group(std::string_view expr);

}  // namespace glia::grammar
