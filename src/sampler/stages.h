// The sampling stages. Each one narrows or reshapes a candidate_list; a sampler composes them into a
// chain in llama.cpp's default order (see sampler.h). Stages that depend on what was said before
// (penalties, DRY) learn it through accept(); stages with randomness (XTC) restart it in reset().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sampler/candidates.h"

namespace glia {

class sampler_stage {
 public:
  virtual ~sampler_stage() = default;
  virtual void apply(candidate_list& c) = 0;
  virtual void accept(int32_t id) {}  // a token entered the context (prompt or generated)
  virtual void reset() {}             // forget the history, restart random streams from the seed
};

// Text of a vocabulary token (what it decodes to); DRY needs it to find sequence breakers.
using token_text_fn = std::function<std::string(int32_t id)>;

// ---- truncation (truncation.cpp) --------------------------------------------------------------
// min_keep: every truncation keeps at least max(min_keep, 1) candidates.

// Keeps the k highest logits (ties at the cut go to the lower id). k <= 0: keeps all.
std::unique_ptr<sampler_stage> make_top_k(int k);
// Nucleus sampling (Holtzman et al. 2019): keeps the smallest most-probable prefix whose probability
// mass reaches p (a mass within 1e-6 of p counts as reaching it, so that p = 0.8 over 0.5/0.3/...
// keeps exactly two despite float rounding). p >= 1: off.
std::unique_ptr<sampler_stage> make_top_p(float p, size_t min_keep = 1);
// Keeps tokens whose probability is at least p times the top probability (within 1e-6 relative).
// p <= 0: off.
std::unique_ptr<sampler_stage> make_min_p(float p, size_t min_keep = 1);
// Locally typical sampling (Meister et al. 2022, "Locally Typical Sampling"): orders tokens by
// |-log p_i - H| (H = entropy of the distribution) and keeps the smallest such prefix whose mass
// reaches p. The list is left in that order (unsorted by logit). p >= 1: off.
std::unique_ptr<sampler_stage> make_typical_p(float p, size_t min_keep = 1);

// ---- reshaping (temperature.cpp, logit_bias.cpp, penalties.cpp) -------------------------------

// Divides logits by t. t <= 0 keeps only the most likely token (lowest id among ties): greedy.
std::unique_ptr<sampler_stage> make_temperature(float t);
// Adds bias[id] to the logit of id; -inf bans the token. Ids absent from the list are ignored.
std::unique_ptr<sampler_stage> make_logit_bias(std::map<int32_t, float> bias);

struct penalty_params {
  int last_n = 64;           // tokens of history considered; 0: off, -1: all since reset
  float repeat = 1.0f;       // CTRL-style (Keskar et al. 2019) as llama.cpp: logit > 0 divided, <= 0 multiplied
  float frequency = 0.0f;    // subtracted once per occurrence in the window
  float presence = 0.0f;     // subtracted once if present in the window
};
// For each token seen c > 0 times in the last last_n accepted tokens:
//   logit = (logit > 0 ? logit / repeat : logit * repeat) - c * frequency - presence
std::unique_ptr<sampler_stage> make_penalties(const penalty_params& p);

// ---- DRY (dry.cpp) ----------------------------------------------------------------------------

struct dry_params {
  float multiplier = 0.0f;   // 0: off
  float base = 1.75f;        // must be >= 1, else off
  int allowed_length = 2;    // repeats up to this long go unpunished (values < 1 act as 1)
  int penalty_last_n = -1;   // history scanned; 0: off, -1: all since reset
  std::vector<std::string> sequence_breakers = {"\n", ":", "\"", "*"};
};
// "Don't Repeat Yourself" (p-e-w, text-generation-webui PR 5677; koboldcpp/llama.cpp): if the context
// ends with a sequence of n tokens that also occurred earlier, the token that followed that earlier
// occurrence would extend the repeat; when n >= allowed_length its logit drops by
//   multiplier * base^(n - allowed_length)   (the longest such n per token counts).
// Matches never span a sequence breaker: a token whose text takes part in an occurrence of a breaker
// string (possibly spread over consecutive tokens) ends the comparison, so only the tokens after the
// last breaker can repeat; a candidate whose own text contains a breaker is never penalized.
// Without token_text no token is a breaker.
std::unique_ptr<sampler_stage> make_dry(const dry_params& p, token_text_fn token_text);

// ---- XTC (xtc.cpp) ----------------------------------------------------------------------------

// Exclude Top Choices: with chance `probability` per call, if two or more tokens have probability
// >= threshold, removes all of them except the least probable one. threshold > 0.5 or probability
// <= 0: off. The coin flips come from a generator seeded with `seed`.
std::unique_ptr<sampler_stage> make_xtc(float probability, float threshold, uint64_t seed, size_t min_keep = 1);

}  // namespace glia
