// The algorithm-specific half of a tokenizer. The tokenizer class owns the vocab, finds special
// tokens in the input (special_split.h), adds BOS/EOS and concatenates pieces; an algorithm turns
// plain-text fragments into ids and says what bytes a normal token stands for.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

// A piece of the input after special-token matching: either plain text or one special token.
struct fragment {
  std::string_view text;     // plain text (empty when token is set)
  int32_t token = no_token;  // a matched special token
  bool is_token() const { return token != no_token; }
};

class algorithm {
 public:
  virtual ~algorithm() = default;
  // Appends the ids of all fragments in order (special tokens pass through as they are; how text
  // next to them is treated, e.g. SPM's space prefix, is the algorithm's business).
  virtual void encode(std::span<const fragment> fragments, std::vector<int32_t>& out) const = 0;
  // The bytes a token of attribute `normal` stands for (SPM: "▁" back to " ").
  virtual std::string normal_piece(const token_data& t) const = 0;
};

// The algorithm for v.kind. `v` must outlive the algorithm. Fails when the vocabulary's merges or
// pipeline are malformed (a regex that does not compile, a merge without two parts).
result<std::unique_ptr<algorithm>> make_algorithm(const vocab& v);

}  // namespace glia::tok
