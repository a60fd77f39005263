#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sampler/random.h"

namespace glia {

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) return -1;
  // max_element returns the first of equal maxima, i.e. the lowest id.
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

sampler::sampler(const sampler_params& p, token_text_fn token_text, std::shared_ptr<const grammar::token_vocab> vocab)
    : greedy_(!(p.temperature > 0.0f)), seed_(p.seed), rng_(p.seed) {
  if (p.grammar) {
    if (!vocab) throw std::invalid_argument("sampler: a grammar needs the vocabulary's pieces");
    grammar_ = std::make_unique<grammar::token_matcher>(p.grammar, std::move(vocab));
    if (p.grammar_after) {
      if (!p.reasoning) throw std::invalid_argument("sampler: a grammar after the reasoning needs the reasoning's tags");
      gate_ = reasoning_gate(*p.reasoning, p.grammar_after->open_id, token_text);
    }
  }
  if (p.reasoning) budget_ = reasoning_budget(*p.reasoning, token_text);
  const size_t min_keep = size_t(std::max(p.min_keep, 0));
  if (!p.logit_bias.empty()) stages_.push_back(make_logit_bias(p.logit_bias));
  if (p.repeat_last_n != 0 && (p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f))
    stages_.push_back(make_penalties({p.repeat_last_n, p.repeat_penalty, p.frequency_penalty, p.presence_penalty}));
  if (p.dry_multiplier != 0.0f && p.dry_base >= 1.0f && p.dry_penalty_last_n != 0) {
    dry_params d{p.dry_multiplier, p.dry_base, p.dry_allowed_length, p.dry_penalty_last_n, p.dry_sequence_breakers};
    stages_.push_back(make_dry(d, std::move(token_text)));
  }
  if (p.top_k > 0) stages_.push_back(make_top_k(p.top_k));
  if (p.typical_p < 1.0f) stages_.push_back(make_typical_p(p.typical_p, min_keep));
  if (p.top_p < 1.0f) stages_.push_back(make_top_p(p.top_p, min_keep));
  if (p.min_p > 0.0f) stages_.push_back(make_min_p(p.min_p, min_keep));
  if (xtc_active(p))
    stages_.push_back(make_xtc(p.xtc_probability, p.xtc_threshold, mix_seed(p.seed, 1), min_keep));
  if (!greedy_) stages_.push_back(make_temperature(p.temperature));
  // Typical-p may drop the best token and XTC the best few: their survivors depend on the whole list.
  greedy_fast_ = greedy_ && !(p.typical_p < 1.0f) && !xtc_active(p);
}

// Greedy under a grammar without the full mask: the chain's stages here change each token's logit on
// its own (bias, penalties, DRY) or keep a best-first prefix (top-k, top-p, min-p), so the masked
// pick, the best allowed token, is the first allowed one in best-first order among the survivors
// whenever any survives. Checking a few tokens' texts costs microseconds; a new grammar state's full
// mask costs milliseconds (every state is new inside a string with a maxLength).
std::optional<int32_t> sampler::greedy_allowed_pick(std::span<const float> logits, int32_t also_allowed) {
  cur_.assign(logits);
  for (auto& s : stages_) s->apply(cur_);
  auto& items = cur_.items();
  for (int tries = 0; tries < 8; ++tries) {
    auto best = std::min_element(items.begin(), items.end(), candidate_before);
    if (best == items.end() || std::isinf(best->logit)) return std::nullopt;
    if (best->id == also_allowed || grammar_->token_allowed(best->id)) return best->id;
    best->logit = -INFINITY;
  }
  return std::nullopt;
}

int32_t sampler::sample(std::span<const float> logits) {
  if (logits.empty()) return -1;
  dead_end_ = gate_broken_;
  if (dead_end_) return end_of_generation();
  if (const int32_t id = budget_.forced(); id >= 0) {
    cur_.assign(logits);
    return id;
  }
  const bool constrain = grammar_ && gate_.constrains();
  const int32_t also_allowed = gate_.opening_token();
  if (constrain && greedy_fast_) {
    if (const auto id = greedy_allowed_pick(logits, also_allowed)) return *id;
  }
  cur_.assign(logits);
  // A constrained reply may not end inside its reasoning: the answer asked for has not come yet.
  if (grammar_ && !constrain)
    for (int32_t eog : grammar_->vocab().eog())
      if (size_t(eog) < cur_.size()) cur_.items()[size_t(eog)].logit = -INFINITY;
  if (constrain) {
    const std::vector<uint64_t>& allowed = grammar_->allowed();
    for (auto& x : cur_.items())
      if (x.id != also_allowed && !grammar::mask_has(allowed, size_t(x.id))) x.logit = -INFINITY;
  }
  const int32_t id = pick();
  if (constrain && id != also_allowed && !grammar_->is_allowed(id)) {
    // Only a fully banned list picks a banned token: the grammar cannot go on, so generation ends.
    dead_end_ = !grammar_->complete();
    return end_of_generation();
  }
  return id;
}

int32_t sampler::end_of_generation() const {
  const auto eog = grammar_->vocab().eog();
  return eog.empty() ? -1 : eog.front();
}

int32_t sampler::pick() {
  for (auto& s : stages_) s->apply(cur_);
  if (greedy_) return cur_.best()->id;

  // Draw proportionally to exp(logit - max); -inf (banned) tokens weigh exactly 0 and are never drawn.
  // No sort needed: any fixed order gives the right distribution and the same seed the same token.
  auto& items = cur_.items();
  const candidate top = *cur_.best();
  const double max_l = top.logit;
  if (std::isinf(max_l) && max_l < 0) return top.id;  // everything banned: nothing better to do
  double total = 0.0;
  for (auto& x : items) {
    x.p = float(std::exp(double(x.logit) - max_l));
    total += x.p;
  }
  for (auto& x : items) x.p = float(x.p / total);
  const double target = uniform01(rng_);
  double acc = 0.0;
  int32_t last_possible = top.id;
  for (const auto& x : items) {
    if (x.p <= 0.0f) continue;
    acc += x.p;
    last_possible = x.id;
    if (acc > target) return x.id;
  }
  return last_possible;  // rounding left the sum a hair short of 1
}

void sampler::accept(int32_t id) {
  for (auto& s : stages_) s->accept(id);
  budget_.accept(id);
  if (!grammar_) return;
  const reasoning_gate::taken t = gate_.accept(id);
  if (t.whole) grammar_->accept(id);
  // Text after the close tag inside the token that closed the reasoning is the answer's start; one
  // the grammar refuses leaves nothing to go on with.
  else if (!t.rest.empty() && !grammar_->accept_text(t.rest)) gate_broken_ = true;
}

void sampler::accept_prompt(int32_t id) {
  for (auto& s : stages_) s->accept(id);
}

void sampler::reset() {
  for (auto& s : stages_) s->reset();
  if (grammar_) grammar_->reset();
  gate_.reset();
  budget_.reset();
  gate_broken_ = false;
  rng_.seed(seed_);
}

}  // namespace glia
