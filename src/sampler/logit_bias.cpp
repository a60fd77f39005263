#include "sampler/stages.h"

namespace glia {
namespace {

class logit_bias_stage final : public sampler_stage {
 public:
  explicit logit_bias_stage(std::map<int32_t, float> bias) : bias_(std::move(bias)) {}
  void apply(candidate_list& c) override {
    bool changed = false;
    for (const auto& [id, b] : bias_) {
      if (candidate* x = c.find(id)) {
        x->logit += b;
        changed = true;
      }
    }
    if (changed) c.mark_unsorted();
  }

 private:
  std::map<int32_t, float> bias_;
};

}  // namespace

std::unique_ptr<sampler_stage> make_logit_bias(std::map<int32_t, float> bias) {
  return std::make_unique<logit_bias_stage>(std::move(bias));
}

}  // namespace glia
