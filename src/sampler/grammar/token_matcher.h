// Follows generated tokens through a grammar and says which next tokens keep the text inside it.
// Stack sets are interned as numbered states, with the step for each (state, character) and each
// state's token mask memoised: generation revisits few states (inside a JSON string, between
// values), so after the first visit a mask costs one pass over the vocabulary's bits.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sampler/grammar/grammar.h"
#include "sampler/grammar/stacks.h"
#include "sampler/grammar/token_vocab.h"
#include "sampler/grammar/utf8_steps.h"

namespace glia::grammar {

// Whether a mask from token_matcher::allowed() has token `id`.
inline bool mask_has(const std::vector<uint64_t>& bits, size_t id) { return id / 64 < bits.size() && ((bits[id / 64] >> (id % 64)) & 1); }

class token_matcher {
 public:
  token_matcher(std::shared_ptr<const compiled> g, std::shared_ptr<const token_vocab> v);

  // Back to the grammar's start (a new generation); what is memoised is kept.
  void reset();
  // Bit id set: the token may come next (end-of-generation tokens only where the text is complete).
  const std::vector<uint64_t>& allowed();
  bool is_allowed(int32_t id) { return id >= 0 && id < vocab_->n_vocab() && mask_has(allowed(), size_t(id)); }
  // The same verdict as is_allowed(id), from the token's own text when the state's mask is not yet
  // known (following its bytes: microseconds, where a mask is a walk of the vocabulary).
  bool token_allowed(int32_t id);
  // Advances past a token; false (and no change) when the grammar does not allow it.
  bool accept(int32_t id);
  // Advances past text that is not a whole token's (what follows a tag inside the token that ends
  // it); false (and no change) when the grammar does not allow it.
  bool accept_text(std::string_view text);
  // The text so far is a whole sentence of the grammar.
  bool complete() const;
  // Where the match is, to come back to after trying tokens ahead (a draft model's proposals).
  struct position {
    stack_set stacks;
    utf8_partial partial;
  };
  position where() const { return {states_[state_], partial_}; }
  void go_to(const position& p);
  // The grammar allows no further text (only an end-of-generation token, if complete).
  bool finished() const;
  const token_vocab& vocab() const { return *vocab_; }

 private:
  static size_t hash_of(const stack_set& s);
  static constexpr uint32_t dead = 0;  // state 0: the empty stack set

  uint32_t intern(stack_set s);
  uint32_t step(uint32_t state, uint32_t cp);
  bool partial_viable(uint32_t state, const utf8_partial& p) const;
  void compute_mask(std::vector<uint64_t>& bits);
  void trim_caches();

  std::shared_ptr<const compiled> g_;
  std::shared_ptr<const token_vocab> vocab_;
  std::vector<stack_set> states_;
  std::unordered_multimap<size_t, uint32_t> ids_;  // hash of a state's stacks -> its number
  size_t state_positions_ = 0;                      // positions held by states_, for the memory bound
  std::unordered_map<uint64_t, uint32_t> steps_;              // (state << 21 | cp) -> state
  std::unordered_map<uint64_t, std::vector<uint64_t>> masks_;  // (state, partial) -> bits
  uint32_t state_ = dead;
  utf8_partial partial_;
  const std::vector<uint64_t>* current_mask_ = nullptr;
};

}  // namespace glia::grammar
