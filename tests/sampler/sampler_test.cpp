// The whole chain: defaults, greedy picks, seeded draws and their distribution, stage order.
#include "sampler_test_util.h"

namespace glia::test {
namespace {

// Only the stages a test names: everything else off.
sampler_params plain(float temperature, uint64_t seed = 42) {
  sampler_params p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<int> histogram(sampler& s, const std::vector<float>& logits, int n) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[size_t(s.sample(logits))];
  return counts;
}

// Chi-square critical values at p = 0.001 (any statistics table): df 1: 10.83, df 3: 16.27, df 4: 18.47.

TEST(sampler_params, defaults_are_llama_cpp_defaults) {
  const sampler_params p;
  EXPECT_FLOAT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.typical_p, 1.0f);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.0f);
  EXPECT_EQ(p.repeat_last_n, 64);
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.0f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_FLOAT_EQ(p.dry_multiplier, 0.0f);
  EXPECT_FLOAT_EQ(p.dry_base, 1.75f);
  EXPECT_EQ(p.dry_allowed_length, 2);
  EXPECT_EQ(p.dry_penalty_last_n, -1);
  EXPECT_EQ(p.dry_sequence_breakers, (std::vector<std::string>{"\n", ":", "\"", "*"}));
  EXPECT_FLOAT_EQ(p.xtc_probability, 0.0f);
  EXPECT_FLOAT_EQ(p.xtc_threshold, 0.1f);
  EXPECT_TRUE(validate(p).is_ok());
}

TEST(sampler_params, validate_names_the_bad_field) {
  sampler_params p;
  p.top_p = 1.5f;
  EXPECT_NE(validate(p).message().find("top_p"), std::string::npos);
  p = {};
  p.dry_base = 0.5f;
  EXPECT_NE(validate(p).message().find("dry_base"), std::string::npos);
  p = {};
  p.repeat_last_n = -2;
  EXPECT_FALSE(validate(p).is_ok());
  p = {};
  p.logit_bias[3] = INFINITY;
  EXPECT_FALSE(validate(p).is_ok());
  p.logit_bias[3] = -INFINITY;  // a ban is fine
  EXPECT_TRUE(validate(p).is_ok());
}

TEST(greedy, picks_the_largest_logit_and_the_lowest_id_among_ties) {
  const std::vector<float> logits = {1.0f, 5.0f, 5.0f, 2.0f};
  EXPECT_EQ(argmax(logits), 1);
  sampler s(plain(0.0f));
  EXPECT_EQ(s.sample(logits), 1);
  sampler with_defaults([] { sampler_params p; p.temperature = 0.0f; return p; }());
  EXPECT_EQ(with_defaults.sample(logits), 1);
  EXPECT_EQ(argmax({}), -1);
  EXPECT_EQ(s.sample(std::vector<float>{}), -1);
}

TEST(greedy, applies_bias_and_penalties_before_picking) {
  auto p = plain(0.0f);
  p.logit_bias[1] = -INFINITY;
  sampler banned(p);
  EXPECT_EQ(banned.sample(std::vector<float>{1.0f, 5.0f, 4.0f}), 2);

  auto r = plain(0.0f);
  r.repeat_penalty = 1.1f;  // 2.0 / 1.1 = 1.82 < 1.9
  sampler s(r);
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}), 0);
  s.accept(0);
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}), 1);
  s.reset();
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}), 0);
}

TEST(greedy, dry_steers_away_from_a_repeat_given_token_texts) {
  const std::vector<std::string> texts = {"a", "b", "c", "d", "e"};
  auto p = plain(0.0f);
  p.dry_multiplier = 0.8f;  // penalty on d after "a b c d a b c": 0.8 * 1.75^(3-2) = 1.4
  sampler s(p, [&](int32_t id) { return texts[size_t(id)]; });
  for (int32_t id : {0, 1, 2, 3, 0, 1, 2}) s.accept(id);
  EXPECT_EQ(s.sample(std::vector<float>{-5.0f, -5.0f, -5.0f, 1.0f, -0.3f}), 4);  // d: 1.0 - 1.4 = -0.4 < -0.3
  EXPECT_EQ(s.sample(std::vector<float>{-5.0f, -5.0f, -5.0f, 1.0f, -0.5f}), 3);  // -0.4 > -0.5
}

TEST(draw, never_picks_a_banned_token) {
  auto p = plain(1.0f);
  p.logit_bias[0] = -INFINITY;
  sampler s(p);
  const auto counts = histogram(s, logits_from_probs({0.9, 0.05, 0.05}), 2000);
  EXPECT_EQ(counts[0], 0);
}

TEST(draw, same_seed_same_tokens_and_reset_replays) {
  // A varying sequence of logits, as a model would produce.
  std::vector<std::vector<float>> steps;
  for (int i = 0; i < 200; ++i) {
    std::vector<float> l(50);
    for (size_t j = 0; j < l.size(); ++j) l[j] = float(std::sin(0.37 * double(i) + 1.3 * double(j)));
    steps.push_back(l);
  }
  auto run = [&](sampler& s) {
    std::vector<int32_t> out;
    for (const auto& l : steps) {
      out.push_back(s.sample(l));
      s.accept(out.back());
    }
    return out;
  };
  sampler_params p;  // the full default chain
  p.seed = 1234;
  p.repeat_penalty = 1.1f;
  p.xtc_probability = 0.5f;
  sampler s1(p), s2(p);
  const auto first = run(s1);
  EXPECT_EQ(first, run(s2));
  s1.reset();
  EXPECT_EQ(first, run(s1));
  p.seed = 4321;
  sampler other(p);
  EXPECT_NE(first, run(other));
  EXPECT_EQ(s1.seed(), 1234u);
}

TEST(draw, follows_the_distribution) {
  const std::vector<double> probs = {0.4, 0.25, 0.2, 0.1, 0.05};
  sampler s(plain(1.0f, 2024));
  EXPECT_LT(chi_square(histogram(s, logits_from_probs(probs), 20000), probs), 18.47);
}

TEST(draw, temperature_sharpens_as_a_power_of_the_probabilities) {
  // Temperature 0.5 turns p into p^2 / sum p^2.
  const std::vector<double> probs = {0.4, 0.25, 0.2, 0.1, 0.05};
  double z = 0;
  for (double q : probs) z += q * q;
  std::vector<double> want;
  for (double q : probs) want.push_back(q * q / z);
  sampler s(plain(0.5f, 99));
  EXPECT_LT(chi_square(histogram(s, logits_from_probs(probs), 20000), want), 18.47);
}

// A temperature so small that the top logit over it overflows float is the t -> 0 limit, greedy (it
// made every weight NaN, and the draw fell through to the least likely candidate).
TEST(draw, a_vanishing_temperature_is_greedy) {
  const std::vector<float> logits = {1.0f, 20.0f, 2.0f, -4.0f};  // 20 / 1e-38 is past FLT_MAX
  for (float t : {1e-38f, 1e-45f}) {
    sampler s(plain(t, 7));
    const auto counts = histogram(s, logits, 200);
    EXPECT_EQ(counts[1], 200) << t;
  }
}

TEST(draw, default_chain_truncates_then_tempers) {
  // Defaults: top-k 40 (no effect), top-p 0.95: running mass 0.5, 0.75, 0.87, 0.93, 0.97 keeps five;
  // min-p 0.05 (cut 0.05 * 0.5 / 0.97) keeps them; temperature 0.8: q^(1/0.8), renormalised.
  const std::vector<double> probs = {0.5, 0.25, 0.12, 0.06, 0.04, 0.03};
  sampler_params p;
  p.seed = 5;
  sampler s(p);
  auto counts = histogram(s, logits_from_probs(probs), 20000);
  EXPECT_EQ(counts[5], 0);
  counts.pop_back();
  double z = 0;
  for (int i = 0; i < 5; ++i) z += std::pow(probs[size_t(i)], 1.25);
  std::vector<double> want;
  for (int i = 0; i < 5; ++i) want.push_back(std::pow(probs[size_t(i)], 1.25) / z);
  EXPECT_LT(chi_square(counts, want), 18.47);
}

TEST(draw, xtc_in_the_chain_leaves_the_tail) {
  // XTC always firing with threshold 0.15 removes 0.4 and 0.3; 0.2 and 0.1 remain, drawn 2:1.
  auto p = plain(1.0f, 77);
  p.xtc_probability = 1.0f;
  p.xtc_threshold = 0.15f;
  sampler s(p);
  const auto counts = histogram(s, logits_from_probs({0.4, 0.3, 0.2, 0.1}), 6000);
  EXPECT_EQ(counts[0] + counts[1], 0);
  EXPECT_LT(chi_square({counts[2], counts[3]}, {2.0 / 3, 1.0 / 3}), 10.83);
}

TEST(order, penalties_run_before_top_k) {
  // Penalised first, id 0 (2.0 / 1.1 = 1.82) falls below id 1 (1.9), which top-1 then keeps.
  auto p = plain(1.0f);
  p.top_k = 1;
  p.repeat_penalty = 1.1f;
  sampler s(p);
  s.accept(0);
  const auto counts = histogram(s, std::vector<float>{2.0f, 1.9f}, 200);
  EXPECT_EQ(counts[1], 200);
}

TEST(order, min_p_sees_the_probabilities_before_temperature) {
  // min-p 0.5 on 0.5/0.3/0.2 cuts at 0.25 and drops the 0.2. Tempering first (t = 2 takes square
  // roots) would have kept it: sqrt(0.2 / 0.5) = 0.63 of the top.
  auto p = plain(2.0f, 3);
  p.min_p = 0.5f;
  sampler s(p);
  const auto counts = histogram(s, logits_from_probs({0.5, 0.3, 0.2}), 2000);
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[1], 0);
}

}  // namespace
}  // namespace glia::test
