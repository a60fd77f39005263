// The normalizer of softmax(logits), for the tools that score a model's distribution (perplexity,
// KL divergence, their base files): the top logit and log sum exp(l - top) over the row, in double
// (a float sum over ~10^5 terms loses digits). log p(i) = l[i] - top - log_sum.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>

namespace glia {

struct softmax_norm {
  size_t top_index = 0;  // the first largest logit
  float top = 0.0f;
  double log_sum = 0.0;
};

inline softmax_norm softmax_normalizer(std::span<const float> logits) {
  softmax_norm n;
  const auto best = std::max_element(logits.begin(), logits.end());
  n.top_index = size_t(best - logits.begin());
  n.top = *best;
  double sum = 0.0;
  for (float l : logits) sum += std::exp(double(l) - double(n.top));
  n.log_sum = std::log(sum);
  return n;
}

}  // namespace glia
