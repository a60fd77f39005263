#include <cmath>

#include "sampler/stages.h"

namespace glia {
namespace {

class temperature_stage final : public sampler_stage {
 public:
  explicit temperature_stage(float t) : t_(t) {}
  void apply(candidate_list& c) override {
    if (c.empty()) return;
    const candidate top = *c.best();
    // The limit t -> 0 puts all mass on the top token; so does a t so small that the top logit over
    // it overflows (1e-38: inf - inf would make every weight NaN).
    if (t_ <= 0.0f || (std::isfinite(top.logit) && !std::isfinite(top.logit / t_))) {
      c.items().assign(1, top);
      return;
    }
    // Dividing by a positive number keeps the order, so a sorted list stays sorted.
    for (auto& x : c.items()) x.logit /= t_;
  }

 private:
  float t_;
};

}  // namespace

std::unique_ptr<sampler_stage> make_temperature(float t) { return std::make_unique<temperature_stage>(t); }

}  // namespace glia
