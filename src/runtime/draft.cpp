#include "runtime/draft.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "glia/session.h"
#include "sampler/grammar/token_matcher.h"

namespace glia {
namespace {

// The most likely token, and whether its probability under softmax(logits) is at least p_min:
// 1 / sum(exp(l - top)) >= p_min, so the sum stops as soon as it passes 1 / p_min (a full sum over a
// 150k vocabulary costs about a millisecond).
std::pair<int32_t, bool> top_token(std::span<const float> logits, float p_min) {
  const auto best = std::max_element(logits.begin(), logits.end());
  const int32_t id = int32_t(best - logits.begin());
  if (p_min <= 0.0f) return {id, true};
  const double limit = 1.0 / double(p_min);
  double sum = 0.0;
  for (float l : logits)
    if ((sum += std::exp(double(l) - double(*best))) > limit) return {id, false};
  return {id, true};
}

}  // namespace

result<std::vector<int32_t>> propose_draft(session& draft, std::span<const int32_t> context, int max_n, float p_min,
                                           int n_vocab_target, grammar::token_matcher* constraint) {
  std::vector<int32_t> out;
  // The last proposal is never evaluated by the draft, so context + max_n - 1 tokens must fit.
  max_n = std::min<int64_t>(max_n, int64_t(draft.n_ctx()) - int64_t(context.size()) + 1);
  if (max_n <= 0) return out;
  // A vocabulary up to 128 entries shorter than the target's: ids past it (added tokens the target
  // has) are nothing the draft can read, so it proposes nothing after them.
  if (std::any_of(context.begin(), context.end(), [&](int32_t id) { return id >= draft.n_vocab(); })) return out;
  std::vector<float> logits;
  GLIA_TRY(draft.eval_reusing(context, logits));
  std::optional<grammar::token_matcher::position> start;
  if (constraint) start = constraint->where();
  status st;
  for (;;) {
    if (constraint) {
      const std::vector<uint64_t>& allowed = constraint->allowed();
      for (size_t i = 0; i < logits.size(); ++i)
        if (!grammar::mask_has(allowed, i)) logits[i] = -INFINITY;
    }
    const auto [id, sure] = top_token(logits, p_min);
    // An end of generation is left out: were it sampled, generation would stop before using it.
    if (!sure || std::isinf(logits[size_t(id)]) || id >= n_vocab_target || draft.is_end_of_generation(id)) break;
    out.push_back(id);
    if (int(out.size()) >= max_n) break;
    if (constraint) constraint->accept(id);
    const int32_t next[1] = {id};
    if (st = draft.eval(next, false, logits); !st) break;
  }
  if (constraint) constraint->go_to(*start);
  if (!st) return error{st.message()};
  return out;
}

}  // namespace glia
