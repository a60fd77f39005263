// Pre-tokenizer regexes, run verbatim with PCRE2 (UTF, JIT when available; the interpreter keeps its
// backtracking state on the heap, so no input recurses on the stack). What \s means is the one thing
// the references disagree on, so it is rewritten into an explicit class per dialect.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace glia::tok {

enum class regex_dialect {
  // llama.cpp: \s is Unicode White_Space (it includes U+0085, not U+FEFF); \d \w \b are ASCII.
  llama_cpp,
  // The reference Hugging Face tokenizer (transformers.js, a JavaScript RegExp with the u flag): \s
  // also matches U+FEFF and not U+0085; \d \w \b are ASCII.
  ecmascript,
};

// The pattern PCRE2 compiles: \s / \S spelled out for the dialect, and the case-insensitive English
// contraction group every Llama-3-style regex starts with spelled with ASCII classes, as both
// references do (PCRE2's Unicode caseless matching would also accept "'ſ" for "'s").
std::string translate_regex(std::string_view pattern, regex_dialect dialect);

class regex {
 public:
  // Compiles `pattern` (as written in tokenizer.json or llama.cpp's table); errors quote PCRE2's message
  // and the offset.
  static result<regex> compile(std::string_view pattern, regex_dialect dialect);

  enum class found { match, none, gave_up };
  // The first match in text[start..] of well-formed UTF-8 `text` (lookarounds see all of `text`),
  // with [begin, end) set on a match. gave_up: the search hit PCRE2's work limits (only pathological
  // patterns do); callers then treat the character at `start` as unmatched and go on after it.
  found find(std::string_view text, size_t start, size_t& begin, size_t& end) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct code;
  std::shared_ptr<const code> code_;
  std::string pattern_;
};

}  // namespace glia::tok
