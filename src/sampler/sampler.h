// Token sampling as a chain of small stages over a candidate list, in llama.cpp's default order:
//   logit bias -> penalties -> DRY -> top-k -> typical-p -> top-p -> min-p -> XTC -> temperature
// then the pick: the most likely survivor (lowest id among ties) when temperature is 0, else a
// seeded draw. Same seed + same accepted tokens + same logits = same tokens. A grammar
// (sampler_params::grammar) runs first: tokens that would take the text out of it get -inf (after a
// reasoning model's thinking only, with sampler_params::grammar_after).
//
// With sampler_params::reasoning and a budget, the tokens that close a reasoning past its budget are
// picked whatever the logits say.
//
// Use: construct, accept_prompt() every prompt token, then per step sample() and accept() the token
// kept.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "sampler/candidates.h"
#include "sampler/grammar/token_matcher.h"
#include "sampler/params.h"
#include "sampler/reasoning_budget.h"
#include "sampler/reasoning_gate.h"
#include "sampler/stages.h"

namespace glia {

class sampler {
 public:
  explicit sampler(const sampler_params& p) : sampler(p, nullptr) {}
  // token_text lets DRY recognise its sequence breakers; without it DRY runs with none. A grammar
  // needs the vocabulary's pieces (session::grammar_vocab); with a grammar and no vocabulary the
  // constructor throws std::invalid_argument (a caller's mistake, not bad input).
  sampler(const sampler_params& p, token_text_fn token_text, std::shared_ptr<const grammar::token_vocab> vocab = nullptr);

  // Picks the next token from [n_vocab] logits; -1 if logits is empty. With a grammar that allows
  // nothing more (it is complete and end-of-generation is banned, or no token can continue it), an
  // end-of-generation token, so that generation ends there.
  int32_t sample(std::span<const float> logits);
  // A generated token was kept: feeds the history of the penalties and DRY, and moves the grammar on.
  void accept(int32_t id);
  // A prompt token entered the context: history only (the grammar constrains what is generated).
  void accept_prompt(int32_t id);
  // Forgets the history and restarts the random streams from the seed (for a new, unrelated context).
  void reset();

  uint64_t seed() const { return seed_; }
  // A grammar constrains the text (sampler_params::grammar).
  bool constrained() const { return grammar_ != nullptr; }
  // The last sample() ended generation because no token could continue the grammar's text, which is
  // not a whole sentence (its tokens all banned by a logit bias, or none spells what it needs, or
  // the text after a reasoning's close tag left it).
  bool grammar_dead_end() const { return dead_end_; }
  // Its matcher, for a draft model to propose only what the grammar allows; null without a grammar
  // and while it waits for the reasoning to end (sampler_params::grammar_after).
  grammar::token_matcher* grammar_matcher() { return gate_.constrains() && gate_.opening_token() < 0 ? grammar_.get() : nullptr; }
  // The candidates left by the last sample(), before the pick; after a draw their p are the
  // probabilities it used (in no particular order): for showing alternatives.
  const candidate_list& last_candidates() const { return cur_; }
  // Tokens accepted since the reply's start that belong to its reasoning (sampler_params::reasoning;
  // 0 without it).
  int reasoning_tokens() const { return budget_.tokens(); }

 private:
  int32_t pick();  // the chain and the pick over cur_
  int32_t end_of_generation() const;  // the token that ends a constrained generation (-1: none)
  std::optional<int32_t> greedy_allowed_pick(std::span<const float> logits, int32_t also_allowed);

  bool greedy_;
  bool greedy_fast_ = false;  // greedy_allowed_pick gives the masked pick
  uint64_t seed_;
  std::vector<std::unique_ptr<sampler_stage>> stages_;
  std::unique_ptr<grammar::token_matcher> grammar_;
  reasoning_gate gate_;        // when the grammar holds
  reasoning_budget budget_;    // when the reasoning must end
  bool gate_broken_ = false;  // the text after a close tag was outside the grammar: a dead end
  bool dead_end_ = false;
  std::mt19937_64 rng_;
  candidate_list cur_;  // reused between calls to keep its allocation
};

// Index of the largest logit, the lowest one among ties; -1 if empty.
int32_t argmax(std::span<const float> logits);

}  // namespace glia
