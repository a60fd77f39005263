// XTC: when it fires, all tokens at or above the threshold but the least likely one go.
#include "sampler_test_util.h"

namespace glia::test {
namespace {

// Probabilities by id: 0.2, 0.4, 0.1, 0.3.
const std::vector<float> logits = logits_from_probs({0.2, 0.4, 0.1, 0.3});

std::set<int32_t> after_xtc(float probability, float threshold, size_t min_keep = 1) {
  auto s = make_xtc(probability, threshold, 7, min_keep);
  return id_set(run_stage(*s, logits));
}

TEST(xtc, removes_all_but_the_least_likely_token_above_the_threshold) {
  EXPECT_EQ(after_xtc(1.0f, 0.15f), (std::set<int32_t>{0, 2}));   // 0.4 and 0.3 go, 0.2 stays
  EXPECT_EQ(after_xtc(1.0f, 0.25f), (std::set<int32_t>{0, 2, 3}));  // 0.4 goes, 0.3 stays
  EXPECT_EQ(after_xtc(1.0f, 0.05f), (std::set<int32_t>{2}));      // all four are above: only 0.1 stays
}

TEST(xtc, never_fires_with_a_single_token_above_or_when_off) {
  const std::set<int32_t> all = {0, 1, 2, 3};
  EXPECT_EQ(after_xtc(1.0f, 0.35f), all);  // only 0.4 is above
  EXPECT_EQ(after_xtc(1.0f, 0.6f), all);   // threshold > 0.5: off
  EXPECT_EQ(after_xtc(0.0f, 0.15f), all);  // probability 0: off
  EXPECT_EQ(after_xtc(1.0f, 0.15f, 3), all);  // would leave 2 < min_keep
}

TEST(xtc, fires_with_the_given_probability_and_reset_replays_the_coin) {
  auto s = make_xtc(0.3f, 0.15f, 12345);
  const int n = 4000;
  std::vector<bool> fired;
  for (int i = 0; i < n; ++i) fired.push_back(run_stage(*s, logits).size() == 2);
  const double k = double(std::count(fired.begin(), fired.end(), true));
  // Binomial(4000, 0.3): mean 1200, sd 29; allow 5 sd.
  EXPECT_NEAR(k, 1200.0, 5 * std::sqrt(n * 0.3 * 0.7));
  s->reset();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(run_stage(*s, logits).size() == 2, fired[size_t(i)]) << i;
}

}  // namespace
}  // namespace glia::test
