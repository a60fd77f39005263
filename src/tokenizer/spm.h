// SentencePiece-style tokenization as llama.cpp does it for tokenizer.ggml.model "llama"
// (llm_tokenizer_spm): escape spaces as "▁", split into UTF-8 characters, repeatedly merge the
// adjacent pair whose concatenation is the highest-scoring vocabulary token (ties: leftmost), then
// emit each final piece as its token or, when it is not one, as byte-fallback tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/algorithm.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

class spm_algorithm final : public algorithm {
 public:
  explicit spm_algorithm(const vocab& v) : vocab_(v) {}
  // A plain fragment gets a " " prefix when add_space_prefix is set and it starts the input or
  // follows a special token.
  void encode(std::span<const fragment> fragments, std::vector<int32_t>& out) const override;
  std::string normal_piece(const token_data& t) const override;

  // Tokenizes already-escaped text (spaces are "▁"), appending ids.
  void encode_escaped(std::string_view text, std::vector<int32_t>& out) const;

 private:
  void emit_piece(std::string_view piece, std::vector<int32_t>& out) const;
  const vocab& vocab_;
};

// " " -> U+2581 and back.
std::string escape_spaces(std::string_view text);
std::string unescape_spaces(std::string_view text);

}  // namespace glia::tok
