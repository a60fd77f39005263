// top-k, top-p, min-p, typical-p and temperature on hand-made distributions.
#include "sampler_test_util.h"

namespace glia::test {
namespace {

TEST(top_k, keeps_the_k_largest_and_breaks_ties_towards_the_lower_id) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 2.0f, 0.0f};
  auto k1 = make_top_k(1);
  EXPECT_EQ(id_order(run_stage(*k1, logits)), (std::vector<int32_t>{1}));
  auto k2 = make_top_k(2);
  EXPECT_EQ(id_order(run_stage(*k2, logits)), (std::vector<int32_t>{1, 2}));
  auto k3 = make_top_k(3);
  EXPECT_EQ(id_order(run_stage(*k3, logits)), (std::vector<int32_t>{1, 2, 3}));
  auto off = make_top_k(0);
  EXPECT_EQ(run_stage(*off, logits).size(), 5u);
  auto big = make_top_k(10);
  EXPECT_EQ(run_stage(*big, logits).size(), 5u);
}

// Probabilities by id: 0.15, 0.5, 0.05, 0.3 (so the kept ids are not simply a prefix of the ids).
const std::vector<float> nucleus = logits_from_probs({0.15, 0.5, 0.05, 0.3});

TEST(top_p, keeps_the_smallest_set_whose_mass_reaches_p) {
  auto at = [](float p, size_t min_keep = 1) {
    auto s = make_top_p(p, min_keep);
    return id_set(run_stage(*s, nucleus));
  };
  EXPECT_EQ(at(0.8f), (std::set<int32_t>{1, 3}));           // 0.5 + 0.3 = 0.8 reaches 0.8
  EXPECT_EQ(at(0.81f), (std::set<int32_t>{1, 3, 0}));       // needs the 0.15 as well
  EXPECT_EQ(at(0.5f), (std::set<int32_t>{1}));
  EXPECT_EQ(at(0.49f), (std::set<int32_t>{1}));
  EXPECT_EQ(at(0.95f), (std::set<int32_t>{1, 3, 0}));       // 0.5 + 0.3 + 0.15
  EXPECT_EQ(at(0.96f), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(at(1.0f), (std::set<int32_t>{0, 1, 2, 3}));     // off
  EXPECT_EQ(at(0.0f), (std::set<int32_t>{1}));              // never empty
  EXPECT_EQ(at(0.5f, 3), (std::set<int32_t>{1, 3, 0}));     // min_keep
}

TEST(min_p, keeps_tokens_at_least_p_times_the_top_probability) {
  const auto logits = logits_from_probs({0.11, 0.5, 0.09, 0.3});
  auto at = [&](float p) {
    auto s = make_min_p(p);
    return id_set(run_stage(*s, logits));
  };
  EXPECT_EQ(at(0.2f), (std::set<int32_t>{1, 3, 0}));  // cut 0.2 * 0.5 = 0.1: 0.11 in, 0.09 out
  EXPECT_EQ(at(0.17f), (std::set<int32_t>{0, 1, 2, 3}));  // cut 0.085
  EXPECT_EQ(at(0.6f), (std::set<int32_t>{1, 3}));     // cut 0.3: the 0.3 itself stays
  EXPECT_EQ(at(0.61f), (std::set<int32_t>{1}));
  EXPECT_EQ(at(0.0f), (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(at(1.0f), (std::set<int32_t>{1}));
}

// Probabilities by id: 0.1, 0.4, 0.2, 0.3. Worked by hand (natural logs):
//   H = -(0.4 ln 0.4 + 0.3 ln 0.3 + 0.2 ln 0.2 + 0.1 ln 0.1) = 1.27985
//   |-ln p - H|: 0.4 -> 0.36356, 0.3 -> 0.07588, 0.2 -> 0.32959, 0.1 -> 1.02274
//   so the typical order is 0.3, 0.2, 0.4, 0.1 with running mass 0.3, 0.5, 0.9, 1.0.
TEST(typical_p, keeps_the_most_typical_tokens_not_the_most_likely) {
  const auto logits = logits_from_probs({0.1, 0.4, 0.2, 0.3});
  // Cross-check the hand values above with the definition.
  const double probs[] = {0.1, 0.4, 0.2, 0.3};
  double h = 0;
  for (double p : probs) h -= p * std::log(p);
  EXPECT_NEAR(h, 1.27985, 1e-5);
  EXPECT_NEAR(std::abs(-std::log(0.3) - h), 0.07588, 1e-5);

  auto at = [&](float p) {
    auto s = make_typical_p(p);
    return id_order(run_stage(*s, logits));
  };
  EXPECT_EQ(at(0.25f), (std::vector<int32_t>{3}));
  EXPECT_EQ(at(0.45f), (std::vector<int32_t>{3, 2}));     // drops the most likely token (id 1)
  EXPECT_EQ(at(0.55f), (std::vector<int32_t>{3, 2, 1}));
  EXPECT_EQ(at(0.95f), (std::vector<int32_t>{3, 2, 1, 0}));
  auto off = make_typical_p(1.0f);
  EXPECT_EQ(run_stage(*off, logits).size(), 4u);
}

TEST(temperature, divides_logits_and_zero_keeps_only_the_best) {
  auto half = make_temperature(0.5f);
  const auto c = run_stage(*half, {1.0f, -2.0f, 3.0f});
  EXPECT_FLOAT_EQ(logit_of(c, 0), 2.0f);
  EXPECT_FLOAT_EQ(logit_of(c, 1), -4.0f);
  EXPECT_FLOAT_EQ(logit_of(c, 2), 6.0f);
  auto zero = make_temperature(0.0f);
  EXPECT_EQ(id_order(run_stage(*zero, {1.0f, 3.0f, 3.0f, 2.0f})), (std::vector<int32_t>{1}));
}

TEST(candidate_list, softmax_matches_the_definition_and_nan_is_never_kept_first) {
  candidate_list c(std::vector<float>{0.0f, std::log(3.0f), NAN});
  c.softmax();
  EXPECT_EQ(id_order(c), (std::vector<int32_t>{1, 0, 2}));
  EXPECT_NEAR(c.items()[0].p, 0.75, 1e-6);
  EXPECT_NEAR(c.items()[1].p, 0.25, 1e-6);
  EXPECT_EQ(c.items()[2].p, 0.0f);
  candidate_list banned(std::vector<float>{-INFINITY, -INFINITY});
  banned.softmax();
  EXPECT_NEAR(banned.items()[0].p, 0.5, 1e-7);
}

}  // namespace
}  // namespace glia::test
