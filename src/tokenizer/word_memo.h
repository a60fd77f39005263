// Pre-token -> ids memo for one encode call: natural text repeats its words, and a hit costs one hash
// and one comparison instead of a BPE merge loop. Open addressing over a power-of-two table with the
// texts and ids in two flat arrays, because std::unordered_map's node chasing and modulo made the memo
// itself the largest cost of encoding (it was ~25% of Llama 3's encode time).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace glia::tok {

class word_memo {
 public:
  static constexpr size_t max_word = 64;       // longer pre-tokens are rare and not memoized
  static constexpr size_t max_entries = 1 << 16;  // then it starts over, bounding memory

  // The ids memoized for `word`, or an empty span with found = false.
  bool find(std::string_view word, std::span<const int32_t>& ids) const {
    if (table_.empty()) return false;
    const uint64_t h = hash(word);
    for (size_t s = h & mask_;; s = (s + 1) & mask_) {
      const entry& e = table_[s];
      if (e.len == 0) return false;
      if (e.hash == h && e.len == word.size() && std::memcmp(texts_.data() + e.text_off, word.data(), word.size()) == 0) {
        ids = std::span<const int32_t>(ids_.data() + e.ids_off, e.ids_len);
        return true;
      }
    }
  }

  // Remembers word -> ids (word not yet present, 0 < size <= max_word).
  void insert(std::string_view word, std::span<const int32_t> ids) {
    if (count_ >= max_entries || table_.empty()) reset(table_.empty() ? 1024 : table_.size());
    if (2 * (count_ + 1) > table_.size()) grow();
    const uint64_t h = hash(word);
    place({h, uint32_t(texts_.size()), uint32_t(word.size()), uint32_t(ids_.size()), uint32_t(ids.size())});
    texts_.append(word);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    ++count_;
  }

 private:
  struct entry {
    uint64_t hash;
    uint32_t text_off, len;  // len 0: empty slot (words are never empty)
    uint32_t ids_off, ids_len;
  };

  // FNV-1a: pre-tokens are a few bytes long, where it is as fast as anything wider.
  static uint64_t hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h ^ (h >> 29);
  }
  void place(const entry& e) {
    size_t s = e.hash & mask_;
    while (table_[s].len != 0) s = (s + 1) & mask_;
    table_[s] = e;
  }
  void reset(size_t capacity) {
    table_.assign(capacity, entry{});
    mask_ = capacity - 1;
    texts_.clear();
    ids_.clear();
    count_ = 0;
  }
  void grow() {
    std::vector<entry> old(2 * table_.size(), entry{});
    old.swap(table_);
    mask_ = table_.size() - 1;
    for (const entry& e : old)
      if (e.len != 0) place(e);
  }

  std::vector<entry> table_;
  size_t mask_ = 0;
  std::string texts_;
  std::vector<int32_t> ids_;
  size_t count_ = 0;
};

}  // namespace glia::tok
