// Helpers for the sampler tests: hand-made distributions and readable views of a candidate list.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "sampler/sampler.h"

namespace glia::test {

// Logits whose softmax is `probs` (log p plus an arbitrary shift, which softmax ignores).
inline std::vector<float> logits_from_probs(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(p > 0 ? float(std::log(p) + 3.0) : -INFINITY);
  return l;
}

inline std::set<int32_t> id_set(const candidate_list& c) {
  std::set<int32_t> s;
  for (const auto& x : c.items()) s.insert(x.id);
  return s;
}

inline std::vector<int32_t> id_order(const candidate_list& c) {
  std::vector<int32_t> v;
  for (const auto& x : c.items()) v.push_back(x.id);
  return v;
}

// Logit of `id` in the list (NaN if absent, which fails any comparison).
inline float logit_of(const candidate_list& c, int32_t id) {
  for (const auto& x : c.items())
    if (x.id == id) return x.logit;
  return NAN;
}

// Runs one stage over fresh logits.
inline candidate_list run_stage(sampler_stage& s, const std::vector<float>& logits) {
  candidate_list c(logits);
  s.apply(c);
  return c;
}

// Pearson's chi-square statistic of observed counts against expected probabilities.
inline double chi_square(const std::vector<int>& counts, const std::vector<double>& probs) {
  double n = 0;
  for (int c : counts) n += c;
  double chi = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = n * probs[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

}  // namespace glia::test
