// Token sampling as a chain of small stages over a candidate list, in llama.cpp's default order:
//   logit bias -> penalties -> DRY -> top-k -> typical-p -> top-p -> min-p -> XTC -> temperature
// then the pick: the most likely survivor (lowest id among ties) when temperature is 0, else a
// seeded draw. Same seed + same accepted tokens + same logits = same tokens.
//
// Use: construct, accept() every prompt token, then per step sample() and accept() the token kept.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "sampler/candidates.h"
#include "sampler/params.h"
#include "sampler/stages.h"

namespace glia {

class sampler {
 public:
  explicit sampler(const sampler_params& p) : sampler(p, nullptr) {}
  // token_text lets DRY recognise its sequence breakers; without it DRY runs with none.
  sampler(const sampler_params& p, token_text_fn token_text);

  // Picks the next token from [n_vocab] logits; -1 if logits is empty.
  int32_t sample(std::span<const float> logits);
  // A token entered the context (every prompt token and every generated one): feeds the history of
  // the penalties and DRY.
  void accept(int32_t id);
  // Forgets the history and restarts the random streams from the seed (for a new, unrelated context).
  void reset();

  uint64_t seed() const { return seed_; }
  // The candidates left by the last sample(), before the pick; after a draw their p are the
  // probabilities it used (in no particular order): for showing alternatives.
  const candidate_list& last_candidates() const { return cur_; }

 private:
  bool greedy_;
  uint64_t seed_;
  std::vector<std::unique_ptr<sampler_stage>> stages_;
  std::mt19937_64 rng_;
  candidate_list cur_;  // reused between calls to keep its allocation
};

// Index of the largest logit, the lowest one among ties; -1 if empty.
int32_t argmax(std::span<const float> logits);

}  // namespace glia
