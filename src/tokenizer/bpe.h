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
#include "tokenizer/word_memo.h"

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
    const uint64_t k = key(left, right);
    for (size_t s = slot(k);; s = (s + 1) & mask_) {
      if (slots_[s].key == k) return &slots_[s].r;
      if (slots_[s].key == empty) return nullptr;
    }
  }
  // Symbol id of a text: its token id, an extra id, or no_token when it takes part in no merge.
  int32_t symbol(std::string_view text) const;
  int32_t n_vocab() const { return n_vocab_; }
  size_t size() const { return count_; }

 private:
  // Open addressing over (left, right) pairs; ids are non-negative, so all-ones never is a key.
  struct entry {
    uint64_t key;
    rule r;
  };
  static constexpr uint64_t empty = ~uint64_t(0);
  static uint64_t key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  size_t slot(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 32) & mask_; }
  void put(uint64_t k, rule r, bool replace);
  int32_t intern(std::string_view text);
  const vocab* v_ = nullptr;
  int32_t n_vocab_ = 0;
  std::unordered_map<std::string, int32_t, text_hash, std::equal_to<>> extra_;  // text -> id >= n_vocab
  std::vector<entry> slots_;
  size_t mask_ = 0, count_ = 0;
};

class bpe_algorithm final : public algorithm {
 public:
  static result<std::unique_ptr<bpe_algorithm>> create(const vocab& v);
  void encode(std::span<const fragment> fragments, std::vector<int32_t>& out) const override;
  std::string normal_piece(const token_data& t) const override;

 private:
  bpe_algorithm(const vocab& v, merge_table m, text_pipeline p);
  // Appends the ids of one pre-token (raw bytes for byte-level vocabularies).
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  // encode_word through the per-call memo.
  void encode_memoized(std::string_view word, word_memo& memo, std::vector<int32_t>& out) const;
  void emit_missing(std::string_view piece, std::vector<int32_t>& out) const;
  int32_t char_symbol(std::string_view ch) const;  // symbol of one UTF-8 character

  const vocab& vocab_;
  merge_table merges_;
  text_pipeline pipeline_;
  bool byte_level_ = false;
  bool escaped_spaces_ = false;        // SPM-style BPE: "▁" in token texts stands for a space
  bool split_at_words_ = false;        // escaped spaces: "▁word"s can be encoded one by one...
  std::vector<std::string> joined_before_mark_;  // ...except after these characters
  std::array<int32_t, 256> byte_symbol_{};  // byte-level: raw byte -> symbol of its character
  std::array<int32_t, 256> hex_byte_{};     // <0xNN> tokens, no_token when absent
  std::vector<int32_t> bmp_symbol_;         // character-level: symbol of each BMP character
};

}  // namespace glia::tok
