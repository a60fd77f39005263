// The draft model's side of speculative decoding (session::generate): greedy proposals while the
// draft is confident.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace glia {

class session;
namespace grammar {
class token_matcher;
}

// Up to max_n tokens `draft` expects after `context` (it is made to hold exactly `context`, reusing
// its cached prefix). Stops before a token whose probability under the draft's full softmax is below
// p_min (the first one included: a guess that unsure costs a wider verification for likely
// nothing), before an end-of-generation token, and before an id the target cannot take
// (>= n_vocab_target). Proposes nothing when `context` holds ids past the draft's vocabulary.
// With the target's grammar (`constraint`, at the target's position), proposals are what the
// grammar allows (the draft's distribution restricted to it, so p_min judges among those): without
// it a draft proposes text the grammar then refuses. The matcher is left where it was.
result<std::vector<int32_t>> propose_draft(session& draft, std::span<const int32_t> context, int max_n, float p_min,
                                           int n_vocab_target, grammar::token_matcher* constraint = nullptr);

}  // namespace glia
