// Token sampling as a chain of small stages over a candidate list. Each stage narrows or reshapes the
// distribution; the last step picks a token (argmax when temperature is 0, else a seeded draw).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace glia {

struct candidate {
  int32_t id;
  float logit;
  float p = 0.0f;  // filled by softmax()
};

class candidate_list {
 public:
  explicit candidate_list(std::span<const float> logits);
  std::vector<candidate>& items() { return items_; }
  const std::vector<candidate>& items() const { return items_; }
  void sort_desc();       // by logit, stable on id (so ties are broken by the lower id)
  void softmax();         // p from logits (requires sorted)
  bool sorted() const { return sorted_; }
  void mark_unsorted() { sorted_ = false; }

 private:
  std::vector<candidate> items_;
  bool sorted_ = false;
};

class sampler_stage {
 public:
  virtual ~sampler_stage() = default;
  virtual void apply(candidate_list& c) = 0;
};

std::unique_ptr<sampler_stage> make_top_k(int k);            // keep the k most likely (k <= 0: all)
std::unique_ptr<sampler_stage> make_top_p(float p);          // smallest set whose mass reaches p
std::unique_ptr<sampler_stage> make_min_p(float p);          // drop tokens below p x top probability
std::unique_ptr<sampler_stage> make_temperature(float t);    // divide logits by t (> 0)

struct sampler_params {
  float temperature = 0.8f;  // 0 = greedy
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  uint64_t seed = 0;
};

class sampler {
 public:
  explicit sampler(const sampler_params& p);
  int32_t sample(std::span<const float> logits);
  uint64_t seed() const { return seed_; }

 private:
  bool greedy_;
  uint64_t seed_;
  std::vector<std::unique_ptr<sampler_stage>> stages_;
  std::mt19937_64 rng_;
};

int32_t argmax(std::span<const float> logits);

}  // namespace glia
