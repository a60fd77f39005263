// Byte-pair encoding by merge rank (llama.cpp's llm_tokenizer_bpe, tokenizers' BPE model): each
// pre-token starts as single characters (bytes for byte-level vocabularies) and the adjacent pair with
// the lowest merge rank is merged until no listed pair remains (ties: leftmost). A priority queue over a
// linked list of symbols keeps this O(n log n) per pre-token.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/algorithm.h"
#include "tokenizer/text_pipeline.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

// Merge rules over symbol ids: ids below n_vocab are tokens; merge parts and results the vocabulary
// lacks get ids from n_vocab up (a merge may produce a text that is no token, as in llama.cpp, where
// such a piece is later emitted byte by byte).
class merge_table {
 public:
  // Errors name the merge (index and text) that is malformed.
  static result<merge_table> build(const vocab& v);

  struct rule {
    int32_t rank;
    int32_t result;
  };
  const rule* find(int32_t left, int32_t right) const {
    auto it = rules_.find(key(left, right));
    return it == rules_.end() ? nullptr : &it->second;
  }
  // Symbol id of a text: its token id, an extra id, or no_token when it takes part in no merge.
  int32_t symbol(std::string_view text) const;
  int32_t n_vocab() const { return n_vocab_; }
  size_t size() const { return rules_.size(); }

 private:
  static uint64_t key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  int32_t intern(const std::string& text);
  const vocab* v_ = nullptr;
  int32_t n_vocab_ = 0;
  std::unordered_map<std::string, int32_t, text_hash, std::equal_to<>> extra_;  // text -> id >= n_vocab
  std::unordered_map<uint64_t, rule> rules_;
};

class bpe_algorithm final : public algorithm {
 public:
  static result<std::unique_ptr<bpe_algorithm>> create(const vocab& v);
  void encode(std::span<const fragment> fragments, std::vector<int32_t>& out) const override;
  std::string normal_piece(const token_data& t) const override;

  struct word_cache;

 private:
  bpe_algorithm(const vocab& v, merge_table m, text_pipeline p);
  // Appends the ids of one pre-token (raw bytes for byte-level vocabularies).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  void emit_missing(std::string_view piece, std::vector<int32_t>& out) const;

  const vocab& vocab_;
  merge_table merges_;
  text_pipeline pipeline_;
  bool byte_level_ = false;
  bool escaped_spaces_ = false;        // SPM-style BPE: "▁" in token texts stands for a space
  std::array<int32_t, 256> byte_symbol_{};  // byte-level: raw byte -> symbol of its character
  std::array<int32_t, 256> hex_byte_{};     // <0xNN> tokens, no_token when absent
};

}  // namespace glia::tok
