// The list of next-token candidates a sampler chain narrows and reshapes. Stages keep it valid for
// each other: a stage that changes logits marks the list unsorted; probabilities are recomputed on
// demand by softmax() over whatever candidates remain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace glia {

struct candidate {
  int32_t id;
  float logit;
  float p = 0.0f;  // filled by softmax()
};

// Total order used everywhere: higher logit first, lower id first among equal logits, so every tie
// (top-k cut, greedy pick) is broken towards the lowest token id.
inline bool candidate_before(const candidate& a, const candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

class candidate_list {
 public:
  candidate_list() = default;
  explicit candidate_list(std::span<const float> logits) { assign(logits); }
  // Refills with ids 0..n-1 in order; NaN logits become -inf so that sorting stays well defined.
  void assign(std::span<const float> logits);

  std::vector<candidate>& items() { return items_; }
  const std::vector<candidate>& items() const { return items_; }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

  void sort_desc();          // by candidate_before
  void keep_top(size_t k);   // keeps the k first by candidate_before, sorted (partial sort: O(n log k))
  bool sorted() const { return sorted_; }
  void mark_unsorted() { sorted_ = false; }
  void truncate(size_t n);   // keeps the first n in the current order

  // Sorts, then sets p = softmax(logit) over the current candidates (in double, stored as float).
  // If every logit is -inf the candidates get equal probability.
  void softmax();
  // Highest logit, lowest id among ties; nullptr when empty. Does not reorder.
  const candidate* best() const;
  // The candidate with this id, or nullptr. O(1) while the list is still in id order, else a scan.
  candidate* find(int32_t id);

 private:
  std::vector<candidate> items_;
  bool sorted_ = false;
};

}  // namespace glia
