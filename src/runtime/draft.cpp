#include "runtime/draft.h"

#include <algorithm>
#include <cmath>

#include "glia/session.h"

namespace glia {
namespace {

// The most likely token and its probability under softmax(logits).
std::pair<int32_t, float> top_token(std::span<const float> logits) {
  const auto best = std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(double(l) - double(*best));
  return {int32_t(best - logits.begin()), float(1.0 / sum)};
}

}  // namespace

result<std::vector<int32_t>> propose_draft(session& draft, std::span<const int32_t> context, int max_n, float p_min,
                                           int n_vocab_target) {
  std::vector<int32_t> out;
  // The last proposal is never evaluated by the draft, so context + max_n - 1 tokens must fit.
  max_n = std::min<int64_t>(max_n, int64_t(draft.n_ctx()) - int64_t(context.size()) + 1);
  if (max_n <= 0) return out;
  std::vector<float> logits;
  GLIA_TRY(draft.eval_reusing(context, logits));
  for (;;) {
    const auto [id, p] = top_token(logits);
    if (p < p_min || id >= n_vocab_target) break;
    out.push_back(id);
    if (int(out.size()) >= max_n || draft.is_end_of_generation(id)) break;
    const int32_t next[1] = {id};
    GLIA_TRY(draft.eval(next, false, logits));
  }
  return out;
}

}  // namespace glia
