// Stages that drop unlikely candidates: top-k, top-p, min-p, typical-p.
#include <algorithm>
#include <cmath>

#include "sampler/stages.h"

namespace glia {
namespace {

// A cumulative probability this close below the target counts as reaching it: softmax in float
// cannot give 0.5 + 0.3 == 0.8 exactly, and users mean the mathematical sum.
constexpr double mass_tolerance = 1e-6;

size_t floor_keep(size_t min_keep) { return std::max<size_t>(min_keep, 1); }

// Length of the shortest prefix whose mass reaches p (at least min_keep, at most the list size).
size_t prefix_reaching(const std::vector<candidate>& items, double p, size_t min_keep) {
  double mass = 0.0;
  for (size_t i = 0; i < items.size(); ++i) {
    mass += items[i].p;
    if (mass >= p - mass_tolerance && i + 1 >= min_keep) return i + 1;
  }
  return items.size();
}

class top_k_stage final : public sampler_stage {
 public:
  explicit top_k_stage(int k) : k_(k) {}
  void apply(candidate_list& c) override {
    if (k_ <= 0 || size_t(k_) >= c.size()) return;
    c.keep_top(size_t(k_));
  }

 private:
  int k_;
};

class top_p_stage final : public sampler_stage {
 public:
  top_p_stage(float p, size_t min_keep) : p_(p), min_keep_(floor_keep(min_keep)) {}
  void apply(candidate_list& c) override {
    if (p_ >= 1.0f || c.empty()) return;
    c.softmax();
    c.truncate(prefix_reaching(c.items(), p_, min_keep_));
  }

 private:
  float p_;
  size_t min_keep_;
};

class min_p_stage final : public sampler_stage {
 public:
  min_p_stage(float p, size_t min_keep) : p_(p), min_keep_(floor_keep(min_keep)) {}
  void apply(candidate_list& c) override {
    if (p_ <= 0.0f || c.empty()) return;
    c.softmax();
    // Same tolerance as for masses: p = 0.2 with a top of 0.5 keeps a token of 0.1.
    const double cut = double(c.items().front().p) * p_ * (1.0 - mass_tolerance);
    size_t keep = 1;
    while (keep < c.size() && (c.items()[keep].p >= cut || keep < min_keep_)) ++keep;
    c.truncate(keep);
  }

 private:
  float p_;
  size_t min_keep_;
};

class typical_p_stage final : public sampler_stage {
 public:
  typical_p_stage(float p, size_t min_keep) : p_(p), min_keep_(floor_keep(min_keep)) {}
  void apply(candidate_list& c) override {
    if (p_ >= 1.0f || c.empty()) return;
    c.softmax();
    auto& items = c.items();
    // Entropy H = -sum p log p (natural log; the ordering below does not depend on the base).
    double entropy = 0.0;
    for (const auto& x : items)
      if (x.p > 0.0f) entropy -= double(x.p) * std::log(double(x.p));
    // Distance of each token's surprisal -log p from the expected surprisal H; zero-probability
    // tokens are infinitely surprising and go last.
    scored_.clear();
    for (const auto& x : items) {
      const double surprisal = x.p > 0.0f ? -std::log(double(x.p)) : HUGE_VAL;
      scored_.push_back({std::abs(surprisal - entropy), x});
    }
    // Stable over the probability order, so equally typical tokens keep the likelier (then lower id) first.
    std::stable_sort(scored_.begin(), scored_.end(), [](const scored& a, const scored& b) { return a.distance < b.distance; });
    for (size_t i = 0; i < items.size(); ++i) items[i] = scored_[i].cand;
    c.mark_unsorted();
    c.truncate(prefix_reaching(items, p_, min_keep_));
  }

 private:
  struct scored {
    double distance;
    candidate cand;
  };
  float p_;
  size_t min_keep_;
  std::vector<scored> scored_;  // scratch, reused between calls
};

}  // namespace

std::unique_ptr<sampler_stage> make_top_k(int k) { return std::make_unique<top_k_stage>(k); }
std::unique_ptr<sampler_stage> make_top_p(float p, size_t min_keep) { return std::make_unique<top_p_stage>(p, min_keep); }
std::unique_ptr<sampler_stage> make_min_p(float p, size_t min_keep) { return std::make_unique<min_p_stage>(p, min_keep); }
std::unique_ptr<sampler_stage> make_typical_p(float p, size_t min_keep) {
  return std::make_unique<typical_p_stage>(p, min_keep);
}

}  // namespace glia
