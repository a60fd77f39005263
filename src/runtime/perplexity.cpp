#include "runtime/perplexity.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/softmax_norm.h"
#include "core/thread_pool.h"
#include "glia/session.h"

namespace glia {
namespace {

double negative_log_likelihood(std::span<const float> logits, int32_t id) {
  const softmax_norm n = softmax_normalizer(logits);
  return n.log_sum - (double(logits[size_t(id)]) - double(n.top));
}

}  // namespace

result<std::vector<int32_t>> perplexity_tokens(const session& s, std::string_view text) {
  if (text.ends_with('\n')) text.remove_suffix(1);
  GLIA_ASSIGN(std::vector<int32_t> ids, s.tokenize(text, false));
  if (const auto bos = s.added_bos()) ids.insert(ids.begin(), *bos);
  return ids;
}

int perplexity_chunk_count(size_t n_tokens, const perplexity_options& opts) {
  const int64_t whole = int64_t(n_tokens) / std::max(1, opts.n_ctx);
  return int(opts.n_chunks < 0 ? whole : std::min<int64_t>(opts.n_chunks, whole));
}

status eval_scored_half(session& s, std::span<const int32_t> chunk, std::vector<float>& logits) {
  const size_t first = chunk.size() / 2;
  s.reset();
  GLIA_TRY(s.eval(chunk.first(first), false, logits));  // only builds the context
  return s.eval(chunk.subspan(first), true, logits);
}

result<perplexity_result> perplexity(session& s, std::span<const int32_t> tokens, const perplexity_options& opts,
                                     const std::function<bool(int, double)>& on_chunk) {
  const int n_ctx = opts.n_ctx;
  if (n_ctx < 4) return make_error("a chunk of {} tokens is too short to score (at least 4)", n_ctx);
  if (opts.n_chunks == 0) return make_error("0 chunks: nothing to score (-1: every chunk)");
  if (int64_t(tokens.size()) < 2 * int64_t(n_ctx))
    return make_error("the text is {} tokens; a perplexity with chunks of {} needs at least {} (two chunks)", tokens.size(), n_ctx,
                      2 * n_ctx);
  if (n_ctx > s.n_ctx()) return make_error("chunks of {} tokens do not fit the context of {}", n_ctx, s.n_ctx());
  const int n_chunks = perplexity_chunk_count(tokens.size(), opts);
  const int64_t nv = s.n_vocab();
  const int first = n_ctx / 2;
  const std::optional<int32_t> bos = opts.bos_first ? s.added_bos() : std::nullopt;

  // Scoring a row is a pass over the vocabulary (150k exponentials for some models): as long as a
  // small model's forward pass, so the rows are shared among threads; each row's value lands in its
  // own slot and the sums run in order, so the result does not depend on the thread count.
  thread_pool pool(opts.n_threads);
  perplexity_result r;
  double nll = 0.0, nll2 = 0.0;
  std::vector<int32_t> chunk;
  std::vector<float> logits;
  std::vector<double> row_nll(size_t(n_ctx - 1 - first));
  for (int c = 0; c < n_chunks; ++c) {
    chunk.assign(tokens.begin() + int64_t(c) * n_ctx, tokens.begin() + int64_t(c + 1) * n_ctx);
    if (bos) chunk[0] = *bos;
    GLIA_TRY(eval_scored_half(s, chunk, logits));
    if (opts.on_rows) GLIA_TRY(opts.on_rows(logits, chunk, pool));
    pool.parallel_for(row_nll.size(), [&](size_t k) {
      row_nll[k] = negative_log_likelihood(std::span(logits).subspan(k * size_t(nv), size_t(nv)), chunk[size_t(first) + k + 1]);
    });
    for (double v : row_nll) {
      nll += v;
      nll2 += v * v;
    }
    r.n_scored += int64_t(row_nll.size());
    ++r.n_chunks;
    r.running.push_back(std::exp(nll / double(r.n_scored)));
    if (on_chunk && !on_chunk(c, r.running.back())) return make_error("stopped after {} chunks", r.n_chunks);
  }
  const double mean = nll / double(r.n_scored);
  const double var = nll2 / double(r.n_scored) - mean * mean;
  r.ppl = std::exp(mean);
  r.ppl_error = var > 0 && r.n_scored > 1 ? r.ppl * std::sqrt(var / double(r.n_scored - 1)) : 0.0;
  return r;
}

}  // namespace glia
