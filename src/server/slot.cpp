#include "server/slot.h"

#include <fmt/core.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/softmax_norm.h"
#include "server/connection.h"
#include "tokenizer/utf8.h"

namespace glia::server {

size_t slot::common_prefix(const std::vector<int32_t>& prompt) const {
  const auto& h = sess_.sequence_history(seq_);
  size_t n = 0;
  while (n < prompt.size() && n < h.size() && prompt[n] == h[n]) ++n;
  return n;
}

void slot::start(std::shared_ptr<job> j) {
  job_ = std::move(j);
  const sampler_params& sp = job_->params.sampling;
  smp_ = std::make_unique<sampler>(sp, [this](int32_t id) { return sess_.token_text(id); },
                                   sp.grammar ? sess_.grammar_vocab() : nullptr);
  text_ = sess_.make_text_stream(sp.grammar != nullptr, job_->params.shown_control_tokens);
  stops_ = std::make_unique<stop_filter>(job_->params.stop);
  n_prefilled_ = 0;
  first_chunk_ = true;
  pending_lp_.clear();
  in_bytes_ = counted_bytes_ = counted_chars_ = offset_base_ = 0;
  sent_.clear();
  echo_lps_.clear();
  job_->n_prompt = int(job_->prompt.size());
  job_->t_slot = job_->t_prefilled = std::chrono::steady_clock::now();
}

void slot::finish(finish_kind k, const std::string& error, int error_status) {
  if (smp_) job_->n_reasoning = smp_->reasoning_tokens();
  job_->t_finished = std::chrono::steady_clock::now();
  job_->finish(k, error, error_status);
  echo_lps_.clear();
  job_.reset();
  const bool constrained = smp_ && smp_->constrained();
  smp_.reset();
  text_.reset();
  stops_.reset();
  // A grammar's memo (states, masks) can reach hundreds of MiB; glibc keeps what this thread freed
  // for its next allocations, so an idle server would hold it for good: give it back.
  if (constrained) malloc_trim(0);
}

bool slot::plan(metrics& m, std::vector<int32_t>& tokens) {
  if (job_->abandoned()) {
    if (job_->first_cancelled_of_request()) m.cancelled++;
    finish(finish_kind::cancelled);
    return false;
  }
  const std::vector<int32_t>& prompt = job_->prompt;
  if (n_prefilled_ < prompt.size()) {
    size_t from = n_prefilled_;
    if (first_chunk_) {
      // Reuse the prefix this sequence already holds (the last prompt token is always evaluated,
      // since its logits are needed); forget the rest of it.
      from = std::min(common_prefix(prompt), prompt.size() - 1);
      if (wants_all_logits()) from = 0;  // a prompt being scored is evaluated whole: its logits are the answer
      if (!sess_.sequence_keep(seq_, int(from))) from = 0;
      job_->n_reused = int(from);
      first_chunk_ = false;
    }
    // Chunk boundaries are fixed multiples of the chunk size counted from the prompt's start, so they
    // do not depend on what else is running; between chunks the other slots' streams move on.
    planned_end_ = std::min(prompt.size(), (from / size_t(chunk_) + 1) * size_t(chunk_));
    tokens.assign(prompt.begin() + std::ptrdiff_t(from), prompt.begin() + std::ptrdiff_t(planned_end_));
    return true;
  }
  const int32_t id = sample_and_emit(m);
  if (id < 0) return false;
  tokens.assign(1, id);
  return true;
}

void slot::absorb(std::span<const float> logits) {
  const size_t n_vocab = size_t(sess_.n_vocab());
  if (n_prefilled_ < job_->prompt.size()) {
    if (wants_all_logits()) score_prompt_chunk(logits, n_prefilled_);  // what the chunk was planned with
    n_prefilled_ = planned_end_;
    if (n_prefilled_ == job_->prompt.size()) {
      job_->t_prefilled = std::chrono::steady_clock::now();
      smp_->reset();
      for (int32_t id : job_->prompt) smp_->accept_prompt(id);
      if (job_->params.echo) emit_echo();
    }
  }
  logits = logits.last(n_vocab);
  logits_.assign(logits.begin(), logits.end());
}

void slot::score_prompt_chunk(std::span<const float> logits, size_t chunk_start) {
  const size_t n_vocab = size_t(sess_.n_vocab());
  const std::vector<int32_t>& prompt = job_->prompt;
  if (chunk_start == 0) {
    token_logprob first;
    first.id = prompt[0];
    first.token = sess_.token_text(prompt[0]);
    first.scored = false;
    echo_lps_.push_back(std::move(first));
  }
  // Row i predicts the token after position chunk_start + i.
  for (size_t i = 0; (i + 1) * n_vocab <= logits.size() && chunk_start + i + 1 < prompt.size(); ++i)
    echo_lps_.push_back(logprob_in(logits.subspan(i * n_vocab, n_vocab), prompt[chunk_start + i + 1]));
}

void slot::emit_echo() {
  gen_event ev;
  ev.text = job_->echo_text;
  // Offsets run over the tokens' own texts, the reply's going on from the prompt's, as vLLM counts
  // them (a prompt given as text may spell its tokens otherwise: BOS, the SentencePiece space).
  size_t chars = 0;
  for (token_logprob& lp : echo_lps_) {
    lp.text_offset = chars;
    chars += tok::utf8_char_count(lp.token);
  }
  if (job_->params.logprobs) {
    ev.logprobs = std::move(echo_lps_);
    echo_lps_.clear();
  } else {
    chars = tok::utf8_char_count(job_->echo_text);
  }
  offset_base_ = chars;
  if (!ev.text.empty() || !ev.logprobs.empty()) job_->emit(std::move(ev));
}

token_logprob slot::logprob_in(std::span<const float> logits, int32_t id) const {
  // log softmax of the model's distribution (before sampling transforms), as OpenAI reports it.
  const softmax_norm z = softmax_normalizer(logits);
  const double log_z = double(z.top) + z.log_sum;
  token_logprob lp;
  lp.id = id;
  lp.token = sess_.token_text(id);
  lp.logprob = float(double(logits[size_t(id)]) - log_z);
  const size_t k = size_t(std::min<int>(job_->params.top_logprobs, int(logits.size())));
  if (k > 0) {
    // The k best in one pass (k is at most 20; scoring a prompt asks this of every token): a short
    // list kept sorted, best first, the lower id first among ties.
    std::vector<int32_t> best;
    const auto before = [&](int32_t a, int32_t b) { return logits[size_t(a)] != logits[size_t(b)] ? logits[size_t(a)] > logits[size_t(b)] : a < b; };
    for (int32_t i = 0; i < int32_t(logits.size()); ++i) {
      if (best.size() == k && !before(i, best.back())) continue;
      if (best.size() == k) best.pop_back();
      best.insert(std::upper_bound(best.begin(), best.end(), i, before), i);
    }
    for (int32_t id : best) lp.top.emplace_back(sess_.token_text(id), float(double(logits[size_t(id)]) - log_z));
    lp.top_ids = std::move(best);
  }
  return lp;
}

token_logprob slot::post_sampling_logprob(int32_t id) const {
  candidate_list c = smp_->last_candidates();  // a copy: softmax() sorts it
  c.softmax();
  token_logprob lp;
  lp.id = id;
  lp.token = sess_.token_text(id);
  const candidate* chosen = c.find(id);
  lp.logprob = chosen && chosen->p > 0.0f ? std::log(chosen->p) : -INFINITY;
  const size_t k = std::min(size_t(std::max(job_->params.top_logprobs, 0)), c.size());
  for (size_t i = 0; i < k; ++i) {
    const candidate& x = c.items()[i];
    lp.top.emplace_back(sess_.token_text(x.id), x.p > 0.0f ? std::log(x.p) : -INFINITY);
    lp.top_ids.push_back(x.id);
  }
  return lp;
}

void slot::filter_text(const std::string& text, gen_event& ev, bool& hit) {
  in_bytes_ += text.size();
  const std::string passed = stops_->push(text, hit);
  if (hit) job_->stop_string = stops_->matched();
  sent_ += passed;
  ev.text += passed;
}

void slot::release_logprobs(gen_event& ev, bool all) {
  while (!pending_lp_.empty() && (all || pending_lp_.front().start < sent_.size())) {
    pending_logprob& p = pending_lp_.front();
    // Starts only grow: count the characters of the new bytes once.
    const size_t upto = std::min(p.start, sent_.size());
    if (upto > counted_bytes_) {
      counted_chars_ += tok::utf8_char_count(std::string_view(sent_).substr(counted_bytes_, upto - counted_bytes_));
      counted_bytes_ = upto;
    }
    p.lp.text_offset = offset_base_ + counted_chars_;
    ev.logprobs.push_back(std::move(p.lp));
    pending_lp_.pop_front();
  }
}

// The held-back text (incomplete characters, a possible stop-string start) at the end of generation.
void slot::emit_tail() {
  bool hit = false;
  gen_event ev;
  filter_text(text_->flush(), ev, hit);
  if (!hit) {
    const std::string rest = stops_->flush();
    sent_ += rest;
    ev.text += rest;
  }
  release_logprobs(ev, !hit);  // no stop string: every token's text went out, even an empty one
  pending_lp_.clear();
  if (!ev.text.empty() || !ev.logprobs.empty()) job_->emit(std::move(ev));
}

int32_t slot::sample_and_emit(metrics& m) {
  job& j = *job_;
  const int max_tokens = j.params.max_tokens;
  if (max_tokens >= 0 && j.n_generated >= max_tokens) {  // max_tokens 0
    finish(finish_kind::length);
    return -1;
  }
  const int32_t id = smp_->sample(logits_);
  if (smp_->grammar_dead_end()) {
    // What was asked for cannot be written: an answer cut short of it would pass for one.
    finish(finish_kind::error,
           fmt::format("no token can continue the text in the constraint after {} generated tokens (every token it allows next "
                       "is banned by logit_bias, or none spells what it needs)", j.n_generated),
           400);
    return -1;
  }
  if (id < 0 || sess_.is_end_of_generation(id)) {  // < 0: a grammar with no way on and no end token
    // Scoring (echo) reports the end token too, as vLLM does: a harness that asked for one token
    // after the prompt finds one entry for it.
    if (id >= 0 && j.params.echo && j.params.logprobs) pending_lp_.push_back({logprob_of(id), in_bytes_});
    emit_tail();
    finish(finish_kind::stop);
    return -1;
  }
  smp_->accept(id);
  ++j.n_generated;
  m.generated_tokens++;
  if (j.params.logprobs) pending_lp_.push_back({j.params.post_sampling_probs ? post_sampling_logprob(id) : logprob_of(id), in_bytes_});
  bool hit = false;
  gen_event ev;
  filter_text(text_->push(id), ev, hit);
  release_logprobs(ev, false);
  if (!ev.text.empty() || !ev.logprobs.empty()) j.emit(std::move(ev));
  if (hit) {
    pending_lp_.clear();  // the stop string's tokens: their text is never returned
    finish(finish_kind::stop);
    return -1;
  }
  const bool out_of_tokens = max_tokens >= 0 && j.n_generated >= max_tokens;
  if (out_of_tokens || int(sess_.sequence_history(seq_).size()) >= sess_.n_ctx()) {
    emit_tail();
    finish(finish_kind::length);
    return -1;
  }
  return id;
}

}  // namespace glia::server
