// Perplexity of a model on a text, computed as llama.cpp's llama-perplexity computes it, so the two
// tools' figures compare: the tokens (BOS first) are cut into chunks of n_ctx; each chunk is
// evaluated from an empty context with its first token replaced by BOS (when the vocabulary adds
// one), and only its second half is scored (every scored token has at least n_ctx / 2 tokens of
// context): the negative log-likelihood of token j + 1 under the logits at position j, for j from
// n_ctx / 2 to n_ctx - 2.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"

namespace glia {

class session;

struct perplexity_options {
  int n_ctx = 512;      // tokens per chunk (at most the session's context)
  int n_chunks = -1;    // < 0: every whole chunk of the text
  bool bos_first = true;  // each chunk starts with BOS (when the vocabulary adds one), as in llama.cpp
  int n_threads = 0;      // for scoring the rows (0: one per core)
  // Called with each chunk's scored rows (logits at positions n_ctx / 2 .. n_ctx - 1, [rows, n_vocab]),
  // the chunk's tokens as evaluated (BOS first) and the scoring threads: for writing a
  // --kl-divergence-base file.
  std::function<status(std::span<const float> rows, std::span<const int32_t> chunk, thread_pool& pool)> on_rows;
};

struct perplexity_result {
  int n_chunks = 0;
  int64_t n_scored = 0;       // tokens scored
  double ppl = 0.0;           // exp(mean NLL)
  double ppl_error = 0.0;     // llama.cpp's estimate: ppl * sd(NLL) / sqrt(n_scored - 1)
  std::vector<double> running;  // the perplexity after each chunk ("[1]12.3456,[2]...")
};

// A text as llama-perplexity reads and tokenizes it: one trailing newline dropped (its -f does so),
// BOS in front when the vocabulary adds one, never an EOS at the end.
result<std::vector<int32_t>> perplexity_tokens(const session& s, std::string_view text);

// How many chunks perplexity() scores for n_tokens tokens: every whole one, or opts.n_chunks of them.
int perplexity_chunk_count(size_t n_tokens, const perplexity_options& opts);

// Evaluates `chunk` from an empty context, keeping the logits of its second half only (positions
// n_ctx / 2 ..), [n_ctx - n_ctx / 2, n_vocab]: the rows perplexity and KL divergence score.
status eval_scored_half(session& s, std::span<const int32_t> chunk, std::vector<float>& logits);

// `tokens` (BOS first, no EOS: perplexity_tokens) must hold at least 2 * n_ctx tokens (as
// llama-perplexity requires). on_chunk(i, running perplexity) is called after each chunk, for a
// progress line; returning false stops (an error).
result<perplexity_result> perplexity(session& s, std::span<const int32_t> tokens, const perplexity_options& opts,
                                     const std::function<bool(int, double)>& on_chunk = {});

}  // namespace glia
