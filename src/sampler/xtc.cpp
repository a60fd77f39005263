// XTC, "exclude top choices" (p-e-w for text-generation-webui; llama.cpp --xtc-*): removing the
// most obvious continuations, while keeping the least likely of the viable ones, breaks clichés.
#include <algorithm>
#include <random>

#include "sampler/random.h"
#include "sampler/stages.h"

namespace glia {
namespace {

class xtc_stage final : public sampler_stage {
 public:
  xtc_stage(float probability, float threshold, uint64_t seed, size_t min_keep)
      : probability_(probability), threshold_(threshold), seed_(seed), min_keep_(std::max<size_t>(min_keep, 1)), rng_(seed) {}

  void reset() override { rng_.seed(seed_); }

  void apply(candidate_list& c) override {
    // Above 0.5 at most one token can pass the threshold, so there is never anything to exclude.
    if (probability_ <= 0.0f || threshold_ > 0.5f || c.size() < 2) return;
    if (uniform01(rng_) >= probability_) return;
    c.softmax();
    const auto& items = c.items();
    size_t above = 0;  // items are sorted, so the tokens at or above the threshold are a prefix
    while (above < items.size() && items[above].p >= threshold_) ++above;
    if (above < 2) return;
    const size_t drop = above - 1;  // all but the least probable of them
    if (items.size() - drop < min_keep_) return;
    c.items().erase(c.items().begin(), c.items().begin() + ptrdiff_t(drop));
  }

 private:
  float probability_;
  float threshold_;
  uint64_t seed_;
  size_t min_keep_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<sampler_stage> make_xtc(float probability, float threshold, uint64_t seed, size_t min_keep) {
  return std::make_unique<xtc_stage>(probability, threshold, seed, min_keep);
}

}  // namespace glia
