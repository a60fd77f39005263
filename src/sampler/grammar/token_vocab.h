// A vocabulary as the grammar matcher sees it: the bytes each token adds to the text, in a byte trie
// so that tokens sharing a prefix are matched against the grammar once for that prefix, and the
// end-of-generation tokens (allowed only where the grammar is complete). Built once per model and
// shared by every sampler with a grammar.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace glia::grammar {

class token_vocab {
 public:
  // pieces[id]: the token's text without special-token rendering (empty for control tokens, which a
  // grammar never allows); eog: the end-of-generation ids.
  token_vocab(const std::vector<std::string>& pieces, std::vector<int32_t> eog);

  struct node {
    uint32_t first_child = 0, n_children = 0;  // into nodes()
    uint32_t first_token = 0, n_tokens = 0;    // into token_ids(): tokens whose text ends here
    uint8_t byte = 0;                          // the byte leading here from the parent
  };
  std::span<const node> nodes() const { return nodes_; }  // nodes()[0] is the root (empty text)
  std::span<const int32_t> token_ids() const { return ids_; }
  std::span<const int32_t> eog() const { return eog_; }
  bool is_eog(int32_t id) const { return id >= 0 && size_t(id) < eog_flag_.size() && eog_flag_[size_t(id)]; }
  const std::string& piece(int32_t id) const { return pieces_[size_t(id)]; }
  int32_t n_vocab() const { return int32_t(pieces_.size()); }

 private:
  std::vector<std::string> pieces_;
  std::vector<node> nodes_;
  std::vector<int32_t> ids_;
  std::vector<int32_t> eog_;
  std::vector<bool> eog_flag_;
};

}  // namespace glia::grammar
