// Finding special-token text in the input before the algorithm sees it (llama.cpp's
// tokenizer_st_partition).
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/algorithm.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

// Splits `text` into plain-text fragments and special tokens. Special tokens are tried longest text
// first; each splits every plain fragment at all of its non-overlapping occurrences, left to right.
// With parse_special false, control and unknown tokens are not matched (their text stays literal) but
// user-defined tokens still are, as in llama.cpp and HF tokenizers. Tokens with the lstrip / rstrip
// attribute swallow the whitespace before / after them. The fragments view `text`.
std::vector<fragment> split_special(const vocab& v, std::string_view text, bool parse_special);

}  // namespace glia::tok
