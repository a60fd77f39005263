#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>

namespace glia {

candidate_list::candidate_list(std::span<const float> logits) {
  items_.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) items_.push_back({int32_t(i), logits[i]});
}

void candidate_list::sort_desc() {
  if (sorted_) return;
  std::stable_sort(items_.begin(), items_.end(), [](const candidate& a, const candidate& b) { return a.logit > b.logit; });
  sorted_ = true;
}

void candidate_list::softmax() {
  sort_desc();
  if (items_.empty()) return;
  const float max_l = items_.front().logit;
  double sum = 0.0;
  for (auto& c : items_) {
    c.p = std::exp(c.logit - max_l);
    sum += c.p;
  }
  for (auto& c : items_) c.p = float(c.p / sum);
}

namespace {

class top_k_stage final : public sampler_stage {
 public:
  explicit top_k_stage(int k) : k_(k) {}
  void apply(candidate_list& c) override {
    if (k_ <= 0 || size_t(k_) >= c.items().size()) return;
    c.sort_desc();
    c.items().resize(size_t(k_));
  }

 private:
  int k_;
};

class top_p_stage final : public sampler_stage {
 public:
  explicit top_p_stage(float p) : p_(p) {}
  void apply(candidate_list& c) override {
    if (p_ >= 1.0f) return;
    c.softmax();
    double mass = 0.0;
    size_t keep = c.items().size();
    for (size_t i = 0; i < c.items().size(); ++i) {
      mass += c.items()[i].p;
      if (mass >= p_) {
        keep = i + 1;
        break;
      }
    }
    c.items().resize(std::max<size_t>(keep, 1));
  }

 private:
  float p_;
};

class min_p_stage final : public sampler_stage {
 public:
  explicit min_p_stage(float p) : p_(p) {}
  void apply(candidate_list& c) override {
    if (p_ <= 0.0f) return;
    c.softmax();
    const float cut = c.items().front().p * p_;
    size_t keep = 1;
    while (keep < c.items().size() && c.items()[keep].p >= cut) ++keep;
    c.items().resize(keep);
  }

 private:
  float p_;
};

class temperature_stage final : public sampler_stage {
 public:
  explicit temperature_stage(float t) : t_(t) {}
  void apply(candidate_list& c) override {
    for (auto& x : c.items()) x.logit /= t_;
  }

 private:
  float t_;
};

}  // namespace

std::unique_ptr<sampler_stage> make_top_k(int k) { return std::make_unique<top_k_stage>(k); }
std::unique_ptr<sampler_stage> make_top_p(float p) { return std::make_unique<top_p_stage>(p); }
std::unique_ptr<sampler_stage> make_min_p(float p) { return std::make_unique<min_p_stage>(p); }
std::unique_ptr<sampler_stage> make_temperature(float t) { return std::make_unique<temperature_stage>(t); }

int32_t argmax(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

sampler::sampler(const sampler_params& p) : greedy_(p.temperature <= 0.0f), seed_(p.seed), rng_(p.seed) {
  stages_.push_back(make_top_k(p.top_k));
  stages_.push_back(make_top_p(p.top_p));
  stages_.push_back(make_min_p(p.min_p));
  if (!greedy_) stages_.push_back(make_temperature(p.temperature));
}

int32_t sampler::sample(std::span<const float> logits) {
  if (greedy_) return argmax(logits);
  candidate_list c(logits);
  for (auto& s : stages_) s->apply(c);
  c.mark_unsorted();  // temperature changed the logits: recompute probabilities
  c.softmax();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double r = u(rng_), acc = 0.0;
  for (const auto& x : c.items()) {
    acc += x.p;
    if (r < acc) return x.id;
  }
  return c.items().back().id;
}

}  // namespace glia
