// A slot: one request being generated in one sequence (KV cache) of the shared session, with its own
// sampler, detokenizer and stop-string filter. Each scheduler step a slot says which tokens it wants
// evaluated (plan: a chunk of its prompt, or the token it just sampled), the scheduler evaluates the
// tokens of all slots in one batched forward, and hands each slot its logits back (absorb). Slots are
// used on the engine thread only.
#pragma once

#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "glia/session.h"
#include "server/job.h"
#include "server/metrics.h"
#include "runtime/stop_filter.h"

namespace glia::server {

class slot {
 public:
  slot(session& s, int seq, int prefill_chunk) : sess_(s), seq_(seq), chunk_(prefill_chunk) {}

  bool busy() const { return job_ != nullptr; }
  int seq() const { return seq_; }
  // Tokens of `prompt` this slot's sequence already holds (the prefix a new job could reuse).
  size_t common_prefix(const std::vector<int32_t>& prompt) const;
  void start(std::shared_ptr<job> j);
  // Advances the job up to its next evaluation: checks for a disconnect, samples and emits a token
  // when decoding. Returns true with the tokens to evaluate in `tokens`, or false when the job needs
  // no evaluation this step (it finished, and the slot is free again).
  bool plan(metrics& m, std::vector<int32_t>& tokens);
  // The logits of the last token planned (of every token planned, where wants_all_logits() said so
  // before the evaluation); the prompt chunk or token is now in the sequence.
  void absorb(std::span<const float> logits);
  // The planned prompt chunk is to be scored token by token (an echoed prompt with logprobs).
  bool wants_all_logits() const { return prefilling() && job_->params.echo && job_->params.logprobs; }
  // The batched evaluation failed: the job ends with this error.
  void fail(const std::string& error, int status = 500) { finish(finish_kind::error, error, status); }
  bool prefilling() const { return busy() && n_prefilled_ < job_->prompt.size(); }

 private:
  void finish(finish_kind k, const std::string& error = {}, int error_status = 500);
  // Samples from logits_, emits text; returns the token to evaluate next, or -1 when the job ended.
  int32_t sample_and_emit(metrics& m);
  token_logprob logprob_of(int32_t id) const { return logprob_in(logits_, id); }
  token_logprob logprob_in(std::span<const float> logits, int32_t id) const;
  // The sampled token's logprob among the candidates the last sample() left, with the most likely of
  // them (post_sampling_probs).
  token_logprob post_sampling_logprob(int32_t id) const;
  // Scores the prompt tokens a chunk's logits predict (an echoed prompt), into echo_lps_.
  void score_prompt_chunk(std::span<const float> logits, size_t chunk_start);
  // The echoed prompt and its tokens' logprobs, once it is all in the sequence.
  void emit_echo();
  void emit_tail();

  session& sess_;
  int seq_;
  int chunk_;
  std::shared_ptr<job> job_;
  std::unique_ptr<sampler> smp_;
  std::unique_ptr<text_stream> text_;
  std::unique_ptr<stop_filter> stops_;
  std::vector<float> logits_;  // [n_vocab] of the last evaluated position
  size_t n_prefilled_ = 0;     // prompt tokens in the sequence so far
  size_t planned_end_ = 0;     // prompt position the planned chunk ends at
  bool first_chunk_ = true;
  // Logprobs wait until some of their token's text is sent: a token's text starts `start` bytes into
  // what the text stream gave the stop filter (in_bytes_), and goes out once the filter has passed
  // more than that (sent_). Tokens whose text is all in a stop string are never reported, so the
  // logprobs match the returned text.
  struct pending_logprob {
    token_logprob lp;
    size_t start;
  };
  std::deque<pending_logprob> pending_lp_;
  size_t in_bytes_ = 0;
  size_t counted_bytes_ = 0, counted_chars_ = 0;  // characters in the first counted_bytes_ bytes sent
  size_t offset_base_ = 0;                        // characters of an echoed prompt before the reply's
  std::vector<token_logprob> echo_lps_;           // the echoed prompt's tokens, scored as they are evaluated
  std::string sent_;                              // the text the stop filter has passed
  // Moves the logprobs of tokens whose text has started going out (all of them with `all`) into ev.
  void release_logprobs(gen_event& ev, bool all);
  // Runs text through the stop filter into ev.text, counting both sides.
  void filter_text(const std::string& text, gen_event& ev, bool& hit);
};

}  // namespace glia::server
