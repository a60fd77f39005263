// What a user sets to control sampling. Defaults are llama.cpp's (common/common.h), so a command line
// that works there means the same here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sampler/grammar/grammar.h"

namespace glia {

// A reasoning model's thinking left free, its answer constrained: the grammar holds from the end of
// the reasoning (as vLLM's structured outputs with a reasoning parser; a schema enforced from the
// first token would keep the model from thinking at all). The reasoning's tags, and whether the reply
// starts inside it, are sampler_params::reasoning's (required with this). The reply may open the
// reasoning with its first token, or start inside it (the prompt opened it); the grammar then starts
// with the token after the one that completes the close tag in the generated text.
struct grammar_after_reasoning {
  int32_t open_id = -1;  // the token that opens it, allowed as the first token beside the grammar's; -1: none

  bool operator==(const grammar_after_reasoning&) const = default;
};

// The reasoning's tags, for counting its tokens and ending it on a budget (reasoning_budget.h).
struct reasoning_limit {
  std::string open, close;     // "<think>", "</think>"
  bool starts_inside = false;  // the prompt opened the reasoning: the reply starts in it
  std::string before;          // starts_inside: the text before the reply, where it ends with the close tag's start
  int budget = -1;             // tokens after the open tag before `forced` is; -1: no limit
  std::vector<int32_t> forced;  // a closing message's tokens, then the close tag's; not empty with a budget

  bool operator==(const reasoning_limit&) const = default;
};

struct sampler_params {
  float temperature = 0.8f;  // 0 = greedy (after the penalties, bias, DRY and XTC have run)
  int top_k = 40;            // <= 0: off
  float top_p = 0.95f;       // 1: off
  float min_p = 0.05f;       // 0: off
  float typical_p = 1.0f;    // 1: off
  int min_keep = 0;          // truncating stages keep at least this many (and always one)

  float repeat_penalty = 1.0f;     // 1: off
  int repeat_last_n = 64;          // history for the three penalties; 0: off, -1: whole context
  float presence_penalty = 0.0f;   // 0: off
  float frequency_penalty = 0.0f;  // 0: off

  float dry_multiplier = 0.0f;  // 0: off
  float dry_base = 1.75f;
  int dry_allowed_length = 2;
  int dry_penalty_last_n = -1;  // 0: off, -1: whole context
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};

  float xtc_probability = 0.0f;  // 0: off
  float xtc_threshold = 0.1f;    // > 0.5: off

  std::map<int32_t, float> logit_bias;  // id -> added to its logit; -inf bans the token

  // Generated text must stay inside this grammar (GBNF, --grammar / --json-schema / response_format);
  // null: unconstrained.
  std::shared_ptr<const grammar::compiled> grammar;
  // With a grammar (and `reasoning`): leave a reasoning model's thinking free and constrain what follows it.
  std::optional<grammar_after_reasoning> grammar_after;
  // A reasoning model's tags: its reasoning tokens are counted, and end on a budget when it has one.
  std::optional<reasoning_limit> reasoning;

  uint64_t seed = 0;

  bool operator==(const sampler_params&) const = default;
};

// Checks ranges so a front end can report bad input; names the field, the value and the limit.
// (The sampler itself never fails: out-of-range values just switch a stage off or are clamped.)
status validate(const sampler_params& p);

// XTC runs (a probability above 0 and a threshold it can reach).
bool xtc_active(const sampler_params& p);

// Whether the seed decides anything: a temperature above 0, or XTC (which also runs before a
// greedy pick).
bool draws_at_random(const sampler_params& p);

// A model's metadata as seen by the sampler layer (which may not depend on the GGUF reader): the
// numeric value of a key, or nullopt when absent or not a number.
using metadata_lookup = std::function<std::optional<double>(std::string_view key)>;

// Overwrites fields from the sampling defaults a GGUF may carry: general.sampling.{temp, top_k, top_p,
// min_p, xtc_probability, xtc_threshold, penalty_last_n, penalty_repeat}. (general.sampling.mirostat*
// and .sequence are not used.) Apply before the user's own settings, which take precedence. A value
// out of range or not an integer where one is needed is skipped and reported in the returned error;
// the other keys are still applied.
status apply_gguf_sampling_defaults(sampler_params& p, const metadata_lookup& lookup);

}  // namespace glia
