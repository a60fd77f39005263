// Grammars in llama.cpp's GBNF notation (its grammars/README.md), compiled to rules over Unicode code
// points, and the matcher that follows a text through them. Constrained generation (--grammar,
// --json-schema, the server's response_format) masks every token whose text would leave the grammar.
//
// Notation: `name ::= alternatives` rules (newline-separated; a rule continues on the next line after
// `|` or inside parentheses), "literals" and [character classes]
// with \n \r \t \\ \" \' \[ \] \- \xHH \uHHHH \UHHHHHHHH escapes, [^...] negation, `.` (any character),
// ( groups ), postfix * + ? {m} {m,} {m,n} (a repetition of a repetition repeats it: "a"{2}{3} is six),
// # comments. The root rule is `root`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace glia::grammar {

// One element of a rule's alternative: a character set, a reference to another rule, or the end of
// the alternative.
struct element {
  enum class kind : uint8_t { chars, rule_ref, end };
  kind type = kind::end;
  bool negated = false;               // chars: matches what is NOT in the ranges
  uint32_t rule = 0;                  // rule_ref: the rule's index
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // chars: inclusive code point ranges
};

// Rules after desugaring (repetitions and groups become rules of their own). Alternatives are stored
// flat: alt_start[r] lists where each of rule r's alternatives begins in `elements`; every
// alternative ends with a kind::end element.
struct compiled {
  std::vector<std::string> rule_names;          // for messages; generated rules are named name_N
  std::vector<bool> generated;                  // a group or repetition's rule, named after its rule
  std::vector<std::vector<uint32_t>> alt_start;  // per rule: indices into elements
  std::vector<element> elements;
  uint32_t root = 0;
  // Where matching starts (stacks.h's initial_stacks), expanded once when the grammar is parsed.
  std::vector<std::vector<uint32_t>> start;
};

// Parses and checks a grammar: every referenced rule defined, the root present, no left recursion
// that grows (a rule that can reach itself before consuming a character, with more to match after
// it, would never stop expanding; `("a"?)*` only loops and is fine), its start within the matcher's
// bounds (stacks.h). Errors name the line and column. Limits keep a hostile grammar's size bounded
// (elements, rules, repetition counts).
result<std::shared_ptr<const compiled>> parse_gbnf(std::string_view text, std::string_view root = "root");

// Whether `text` (UTF-8) is a whole sentence of the grammar. For tests and tools; generation uses
// the matcher below.
bool matches(const compiled& g, std::string_view text);

// Whether `text` can be continued into a sentence (every prefix of a sentence, the sentence included).
bool is_prefix(const compiled& g, std::string_view text);

// How far a text goes through the grammar, for a validator (glia grammar --check): a whole
// sentence, a prefix of one, or where it leaves (the byte offset of the first byte that cannot
// follow, or of an invalid UTF-8 sequence).
struct text_check {
  enum class verdict { sentence, prefix, leaves, invalid_utf8, too_complex } result;
  size_t offset = 0;  // leaves / invalid_utf8 / too_complex: where
};
text_check check_text(const compiled& g, std::string_view text);

}  // namespace glia::grammar
