// The draft model's side of speculative decoding (session::generate): greedy proposals while the
// draft is confident.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace glia {

class session;

// Up to max_n tokens `draft` expects after `context` (it is made to hold exactly `context`, reusing
// its cached prefix). Stops before a token whose probability under the draft's full softmax is below
// p_min (the first one included: a guess that unsure costs a wider verification for likely
// nothing), before an end-of-generation token, and before an id the target cannot take
// (>= n_vocab_target). Proposes nothing when `context` holds ids past the draft's vocabulary.
result<std::vector<int32_t>> propose_draft(session& draft, std::span<const int32_t> context, int max_n, float p_min,
                                           int n_vocab_target);

}  // namespace glia
