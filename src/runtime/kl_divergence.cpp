#include "runtime/kl_divergence.h"

#include <algorithm>
#include <cmath>

#include "core/softmax_norm.h"
#include "core/thread_pool.h"
#include "glia/session.h"
#include "runtime/perplexity.h"

namespace glia {
namespace {

// One position: this model's logits against the base's record; the sums' terms, as llama.cpp
// forms them (its KL sum skips base log-probabilities at or below -16, which the record cannot
// tell apart).
struct position {
  double nll = 0, nll_base = 0, kld = 0, p_diff = 0;
  bool same_top = false;
};

position compare(std::span<const float> logits, const uint16_t* record, int32_t token) {
  const softmax_norm n = softmax_normalizer(logits);
  const double log_norm = double(n.top) + n.log_sum;  // log sum exp
  position p;
  p.nll = log_norm - double(logits[size_t(token)]);
  p.nll_base = -double(decoded_logprob(record, token));
  int64_t top_base = 0;
  float top_base_lp = decoded_logprob(record, 0);
  for (int64_t i = 0; i < int64_t(logits.size()); ++i) {
    const float lp_base = decoded_logprob(record, i);
    if (lp_base > top_base_lp) {
      top_base_lp = lp_base;
      top_base = i;
    }
    if (lp_base > -16.0f) p.kld += std::exp(double(lp_base)) * (double(lp_base) - (double(logits[size_t(i)]) - log_norm));
  }
  p.same_top = top_base == int64_t(n.top_index);
  p.p_diff = std::exp(-p.nll) - std::exp(-p.nll_base);
  return p;
}

estimate mean_and_error(double sum, double sum2, int64_t count) {
  if (count < 1) return {};
  const double f = sum / double(count);
  const double var = sum2 / double(count) - f * f;
  return {f, var > 0 && count > 10 ? std::sqrt(var / double(count - 1)) : 0.0};
}

double covariance(double a, double b, double ab, int64_t count) {
  if (count < 10) return 0.0;
  return (ab / double(count) - (a / double(count)) * (b / double(count))) / double(count - 1);
}

}  // namespace

float percentile(const std::vector<float>& sorted, float fraction) {
  if (sorted.empty()) return 0.0f;
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  float p = fraction * float(sorted.size() - 1);
  const size_t ip = size_t(p);
  p -= float(ip);
  return (1 - p) * sorted[ip] + p * sorted[std::min(ip + 1, sorted.size() - 1)];
}

kl_divergence_report report(const kl_divergence_sums& s, bool with_percentiles) {
  kl_divergence_report r;
  r.count = s.count;
  const estimate log_ppl = mean_and_error(s.nll, s.nll2, s.count);
  const estimate log_ppl_base = mean_and_error(s.nll_base, s.nll_base2, s.count);
  r.ppl = {std::exp(log_ppl.value), std::exp(log_ppl.value) * log_ppl.error};
  r.ppl_base = {std::exp(log_ppl_base.value), std::exp(log_ppl_base.value) * log_ppl_base.error};
  const double cov = covariance(s.nll, s.nll_base, s.nll_nll_base, s.count);
  r.log_ppl_correlation = log_ppl.error > 0 && log_ppl_base.error > 0 ? cov / (log_ppl.error * log_ppl_base.error) : 0.0;
  r.log_ppl_ratio = {log_ppl.value - log_ppl_base.value,
                     std::sqrt(std::max(0.0, log_ppl.error * log_ppl.error + log_ppl_base.error * log_ppl_base.error - 2.0 * cov))};
  r.ppl_ratio = {std::exp(r.log_ppl_ratio.value), std::exp(r.log_ppl_ratio.value) * r.log_ppl_ratio.error};
  const double ppl_cov = r.ppl.value * r.ppl_base.value * cov;
  r.ppl_diff = {r.ppl.value - r.ppl_base.value,
                std::sqrt(std::max(0.0, r.ppl.error * r.ppl.error + r.ppl_base.error * r.ppl_base.error - 2.0 * ppl_cov))};
  r.kld = mean_and_error(s.kld, s.kld2, s.count);
  r.p_diff = mean_and_error(s.p_diff, s.p_diff2, s.count);
  const estimate mse = mean_and_error(s.p_diff2, s.p_diff4, s.count);
  const double rms = std::sqrt(mse.value);
  r.p_diff_rms = {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
  const double top = s.count > 0 ? double(s.n_same_top) / double(s.count) : 0.0;
  r.same_top = {top, s.count > 1 ? std::sqrt(top * (1 - top) / double(s.count - 1)) : 0.0};
  if (with_percentiles) {
    r.kld_sorted = s.kld_values;
    r.p_diff_sorted = s.p_diff_values;
    std::sort(r.kld_sorted.begin(), r.kld_sorted.end());
    std::sort(r.p_diff_sorted.begin(), r.p_diff_sorted.end());
  }
  return r;
}

status check_base_vocabulary(const logprob_header& h, int64_t n_vocab) {
  if (h.n_vocab != n_vocab)
    return make_error("the base log-probabilities are over {} tokens and this model's vocabulary has {}", h.n_vocab, n_vocab);
  return {};
}

result<kl_divergence_sums> kl_divergence(session& s, logprob_reader& base, int n_threads,
                                         const std::function<void(int, const kl_divergence_sums&)>& on_chunk) {
  const logprob_header& h = base.header();
  GLIA_TRY(check_base_vocabulary(h, s.n_vocab()));
  if (h.n_ctx > s.n_ctx())
    return make_error("the base log-probabilities were computed with chunks of {} tokens; the context holds {} (use -c {})", h.n_ctx,
                      s.n_ctx(), h.n_ctx);
  const int first = h.n_ctx / 2;
  const size_t n_scored = size_t(h.n_ctx - 1 - first), words = logprob_record_words(h.n_vocab);
  const auto bos = s.added_bos();
  thread_pool pool(n_threads);
  kl_divergence_sums sums;
  std::vector<int32_t> chunk;
  std::vector<uint16_t> records;
  std::vector<float> logits;
  std::vector<position> positions(n_scored);
  for (int c = 0; c < h.n_chunk; ++c) {
    GLIA_TRY(base.read_chunk(records));
    chunk.assign(h.tokens.begin() + int64_t(c) * h.n_ctx, h.tokens.begin() + int64_t(c + 1) * h.n_ctx);
    if (bos) chunk[0] = *bos;
    GLIA_TRY(eval_scored_half(s, chunk, logits));
    pool.parallel_for(n_scored, [&](size_t k) {
      positions[k] = compare(std::span<const float>(logits).subspan(k * size_t(h.n_vocab), size_t(h.n_vocab)), records.data() + k * words,
                             chunk[size_t(first) + k + 1]);
    });
    for (const position& p : positions) {  // in order: the sums do not depend on the thread count
      sums.nll += p.nll;
      sums.nll2 += p.nll * p.nll;
      sums.nll_base += p.nll_base;
      sums.nll_base2 += p.nll_base * p.nll_base;
      sums.nll_nll_base += p.nll * p.nll_base;
      sums.kld += p.kld;
      sums.kld2 += p.kld * p.kld;
      sums.p_diff += p.p_diff;
      sums.p_diff2 += p.p_diff * p.p_diff;
      sums.p_diff4 += p.p_diff * p.p_diff * p.p_diff * p.p_diff;
      sums.n_same_top += p.same_top;
      ++sums.count;
      sums.kld_values.push_back(float(p.kld));
      sums.p_diff_values.push_back(float(p.p_diff));
    }
    if (on_chunk) on_chunk(c, sums);
  }
  return sums;
}

}  // namespace glia
