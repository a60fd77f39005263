// Repetition / presence / frequency penalties (llama.cpp semantics) and logit bias.
#include "sampler_test_util.h"

namespace glia::test {
namespace {

const std::vector<float> base_logits = {2.0f, -1.0f, 0.5f, 0.0f, 3.0f, -0.5f};

candidate_list penalized(const penalty_params& p, const std::vector<int32_t>& history) {
  auto s = make_penalties(p);
  for (int32_t id : history) s->accept(id);
  return run_stage(*s, base_logits);
}

TEST(penalties, repeat_divides_positive_and_multiplies_non_positive_logits) {
  // History 0, 1, 1, 3: ids 0, 1 and 3 are penalized; 2, 4, 5 are not.
  const auto c = penalized({64, 2.0f, 0.0f, 0.0f}, {0, 1, 1, 3});
  EXPECT_FLOAT_EQ(logit_of(c, 0), 1.0f);   // 2 / 2
  EXPECT_FLOAT_EQ(logit_of(c, 1), -2.0f);  // -1 * 2 (once, whatever the count)
  EXPECT_FLOAT_EQ(logit_of(c, 2), 0.5f);
  EXPECT_FLOAT_EQ(logit_of(c, 3), 0.0f);   // 0 * 2
  EXPECT_FLOAT_EQ(logit_of(c, 4), 3.0f);
  EXPECT_FLOAT_EQ(logit_of(c, 5), -0.5f);
}

TEST(penalties, frequency_scales_with_the_count_and_presence_does_not) {
  const auto c = penalized({64, 1.0f, 0.25f, 0.5f}, {0, 1, 1, 3});
  EXPECT_FLOAT_EQ(logit_of(c, 0), 2.0f - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(logit_of(c, 1), -1.0f - 2 * 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(logit_of(c, 3), 0.0f - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(logit_of(c, 2), 0.5f);
  // All three together: the repeat penalty first, then the subtraction.
  const auto all = penalized({64, 2.0f, 0.25f, 0.5f}, {0, 1, 1, 3});
  EXPECT_FLOAT_EQ(logit_of(all, 0), 2.0f / 2 - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(logit_of(all, 1), -1.0f * 2 - 2 * 0.25f - 0.5f);
}

TEST(penalties, only_the_last_n_tokens_count) {
  const auto c = penalized({2, 2.0f, 0.0f, 0.0f}, {0, 1, 1, 3});  // window: 1, 3
  EXPECT_FLOAT_EQ(logit_of(c, 0), 2.0f);
  EXPECT_FLOAT_EQ(logit_of(c, 1), -2.0f);
  EXPECT_FLOAT_EQ(logit_of(c, 3), 0.0f);
  const auto freq = penalized({2, 1.0f, 1.0f, 0.0f}, {1, 1, 1, 3});  // window: 1, 3: count of 1 is 1
  EXPECT_FLOAT_EQ(logit_of(freq, 1), -2.0f);

  const auto off = penalized({0, 2.0f, 1.0f, 1.0f}, {0, 1, 1, 3});
  for (int32_t id = 0; id < 6; ++id) EXPECT_EQ(logit_of(off, id), base_logits[size_t(id)]);

  std::vector<int32_t> long_history(1000, 4);
  long_history.insert(long_history.begin(), 0);  // the 0 is 1001 tokens back
  const auto whole = penalized({-1, 2.0f, 0.0f, 0.0f}, long_history);
  EXPECT_FLOAT_EQ(logit_of(whole, 0), 1.0f);
  EXPECT_FLOAT_EQ(logit_of(whole, 4), 1.5f);
}

TEST(penalties, reset_forgets_and_reordered_lists_are_handled) {
  auto s = make_penalties({64, 2.0f, 0.0f, 0.0f});
  s->accept(4);
  s->reset();
  EXPECT_FLOAT_EQ(logit_of(run_stage(*s, base_logits), 4), 3.0f);
  s->accept(4);
  candidate_list c(base_logits);
  c.keep_top(3);  // ids 4, 0, 2 in logit order
  s->apply(c);
  EXPECT_FLOAT_EQ(logit_of(c, 4), 1.5f);
  EXPECT_FLOAT_EQ(logit_of(c, 0), 2.0f);
}

TEST(logit_bias, adds_the_bias_and_minus_infinity_bans) {
  auto s = make_logit_bias({{2, 1.5f}, {4, -INFINITY}, {99, 5.0f}});
  const auto c = run_stage(*s, base_logits);
  EXPECT_FLOAT_EQ(logit_of(c, 2), 2.0f);
  EXPECT_EQ(logit_of(c, 4), -INFINITY);
  EXPECT_FLOAT_EQ(logit_of(c, 0), 2.0f);
  EXPECT_EQ(c.size(), base_logits.size());  // id 99 is not a token here: ignored
}

}  // namespace
}  // namespace glia::test
