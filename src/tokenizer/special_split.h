// Finding special-token text in the input before the algorithm sees it: llama.cpp's
// tokenizer_st_partition for GGUF vocabularies, Hugging Face's added-token split for tokenizer.json.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/algorithm.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

// Splits text into plain-text fragments and special tokens. With parse_special false, control and
// unknown tokens are not matched (their text stays literal) but user-defined tokens still are, as in
// llama.cpp and HF tokenizers. Tokens with the lstrip / rstrip attribute swallow the whitespace before /
// after them. Matching follows v.matching:
//  * longest_token_first (llama.cpp): tokens are tried longest text first; each splits every plain
//    fragment at all of its non-overlapping occurrences, left to right.
//  * leftmost_longest (HF): the input is scanned left to right and at each position the longest token
//    starting there is taken.
// A trie over the token texts finds candidates in one pass, so thousands of added tokens (Gemma has
// 6415) cost no more than a few.
class special_splitter {
 public:
  explicit special_splitter(const vocab& v);  // `v` must outlive the splitter
  std::vector<fragment> split(std::string_view text, bool parse_special) const;

 private:
  struct node {
    int32_t token = no_token;                       // token whose text ends here
    std::vector<std::pair<uint8_t, int32_t>> next;  // byte -> child, sorted
  };
  int32_t child(int32_t n, uint8_t b) const;
  bool usable(int32_t id, bool parse_special) const;
  // Calls f(id, length) for every token whose text starts at text[pos].
  template <typename F>
  void matches_at(std::string_view text, size_t pos, const F& f) const;
  std::vector<fragment> split_longest_first(std::string_view text, bool parse_special) const;
  std::vector<fragment> split_leftmost(std::string_view text, bool parse_special) const;

  const vocab& v_;
  std::vector<node> nodes_;
  bool first_byte_[256] = {};
};

}  // namespace glia::tok
