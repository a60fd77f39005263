// KL divergence of a model from a base model's log-probabilities (llama-perplexity's
// --kl-divergence): the base file's chunks are evaluated as perplexity evaluates them, and each
// scored position compares this model's distribution with the base's. The statistics and their
// uncertainties are llama.cpp's, so the figures of the two tools compare.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "runtime/logprob_file.h"

namespace glia {

class session;

struct kl_divergence_sums {
  double nll = 0, nll2 = 0, nll_base = 0, nll_base2 = 0, nll_nll_base = 0;
  double kld = 0, kld2 = 0, p_diff = 0, p_diff2 = 0, p_diff4 = 0;
  int64_t n_same_top = 0, count = 0;
  std::vector<float> kld_values, p_diff_values;  // per scored position
};

// A mean and its uncertainty, as llama.cpp reports them.
struct estimate {
  double value = 0.0, error = 0.0;
};

struct kl_divergence_report {
  estimate ppl, ppl_base, log_ppl_ratio, ppl_ratio, ppl_diff, kld, p_diff, p_diff_rms, same_top;
  double log_ppl_correlation = 0.0;
  // Sorted per-position values for the percentiles.
  std::vector<float> kld_sorted, p_diff_sorted;
  int64_t count = 0;
};

// The running figures after some chunks (the per-chunk line) or all of them.
kl_divergence_report report(const kl_divergence_sums& s, bool with_percentiles);
// A value at `fraction` of sorted values, interpolated as llama.cpp does.
float percentile(const std::vector<float>& sorted, float fraction);

// The base must be over the model's vocabulary (checked by kl_divergence; front ends check it
// before sizing a context for the base's chunks).
status check_base_vocabulary(const logprob_header& h, int64_t n_vocab);

// Evaluates every chunk of `base` with `s` (BOS first, as the base was) and compares; on_chunk(i,
// sums so far) after each. n_threads: for the per-position comparisons.
result<kl_divergence_sums> kl_divergence(session& s, logprob_reader& base, int n_threads,
                                         const std::function<void(int, const kl_divergence_sums&)>& on_chunk = {});

}  // namespace glia
