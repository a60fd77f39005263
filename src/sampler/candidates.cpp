#include "sampler/candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace glia {

void candidate_list::assign(std::span<const float> logits) {
  items_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
    items_[i] = {int32_t(i), l, 0.0f};
  }
  sorted_ = false;
}

void candidate_list::sort_desc() {
  if (sorted_) return;
  std::sort(items_.begin(), items_.end(), candidate_before);
  sorted_ = true;
}

void candidate_list::keep_top(size_t k) {
  if (k >= items_.size()) return sort_desc();
  if (!sorted_) std::partial_sort(items_.begin(), items_.begin() + ptrdiff_t(k), items_.end(), candidate_before);
  items_.resize(k);
  sorted_ = true;
}

void candidate_list::truncate(size_t n) {
  if (n < items_.size()) items_.resize(n);
}

void candidate_list::softmax() {
  sort_desc();
  if (items_.empty()) return;
  const double max_l = items_.front().logit;
  if (std::isinf(max_l) && max_l < 0) {
    for (auto& c : items_) c.p = float(1.0 / double(items_.size()));
    return;
  }
  double sum = 0.0;
  for (const auto& c : items_) sum += std::exp(double(c.logit) - max_l);
  for (auto& c : items_) c.p = float(std::exp(double(c.logit) - max_l) / sum);
}

const candidate* candidate_list::best() const {
  if (items_.empty()) return nullptr;
  if (sorted_) return &items_.front();
  return &*std::min_element(items_.begin(), items_.end(), candidate_before);
}

candidate* candidate_list::find(int32_t id) {
  if (id < 0) return nullptr;
  if (size_t(id) < items_.size() && items_[size_t(id)].id == id) return &items_[size_t(id)];
  for (auto& c : items_)
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace glia
