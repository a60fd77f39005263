// DRY on hand-built histories. The expected penalty is the documented formula
// multiplier * base^(n - allowed_length), n = length of the repeat the token would extend.
#include <cfloat>

#include "sampler_test_util.h"

namespace glia::test {
namespace {

// A tiny vocabulary: one string per id.
enum : int32_t { a, b, c, d, nl, x, y, colon_word, n_vocab };
const std::vector<std::string> texts = {"a", "b", "c", "d", "\n", "x", "y", "re:"};

token_text_fn vocab_text() {
  return [](int32_t id) { return id >= 0 && id < n_vocab ? texts[size_t(id)] : std::string(); };
}

// Penalty subtracted from each id after the history (all logits start at 0).
std::vector<double> dry_penalties(const dry_params& p, const std::vector<int32_t>& history,
                                  token_text_fn text = vocab_text()) {
  auto s = make_dry(p, std::move(text));
  for (int32_t id : history) s->accept(id);
  const auto cands = run_stage(*s, std::vector<float>(n_vocab, 0.0f));
  std::vector<double> pen;
  for (int32_t id = 0; id < n_vocab; ++id) pen.push_back(-double(logit_of(cands, id)));
  return pen;
}

dry_params params(int allowed = 2, std::vector<std::string> breakers = {"\n", ":", "\"", "*"}) {
  dry_params p;
  p.multiplier = 0.8f;
  p.base = 1.75f;
  p.allowed_length = allowed;
  p.penalty_last_n = -1;
  p.sequence_breakers = std::move(breakers);
  return p;
}

std::vector<double> only(int32_t id, double value) {
  std::vector<double> v(n_vocab, 0.0);
  v[size_t(id)] = value;
  return v;
}

void expect_penalties(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "token " << i;
}

TEST(dry, penalizes_the_token_that_would_extend_a_repeat_past_allowed_length) {
  // "a b c d a b c": the context ends with "a b c" (n = 3), which was followed by d.
  const std::vector<int32_t> h = {a, b, c, d, a, b, c};
  expect_penalties(dry_penalties(params(2), h), only(d, 0.8 * std::pow(1.75, 3 - 2)));
  expect_penalties(dry_penalties(params(3), h), only(d, 0.8 * std::pow(1.75, 3 - 3)));
  expect_penalties(dry_penalties(params(4), h), only(d, 0.0));  // a repeat of 3 is allowed
}

TEST(dry, each_token_gets_the_longest_repeat_it_would_extend) {
  // "x b c d a b c y a b c": "b c" then d (n = 2), "a b c" then y (n = 3).
  const auto got = dry_penalties(params(2), {x, b, c, d, a, b, c, y, a, b, c});
  std::vector<double> want(n_vocab, 0.0);
  want[d] = 0.8 * std::pow(1.75, 0);
  want[y] = 0.8 * std::pow(1.75, 1);
  expect_penalties(got, want);
}

TEST(dry, a_sequence_breaker_stops_the_match) {
  // "a b \n c d a b \n c": without breakers "a b \n c" (n = 4) would repeat; with "\n" a breaker
  // only "c" follows the last one, too short to count.
  const std::vector<int32_t> h = {a, b, nl, c, d, a, b, nl, c};
  expect_penalties(dry_penalties(params(2), h), only(d, 0.0));
  expect_penalties(dry_penalties(params(2, {}), h), only(d, 0.8 * std::pow(1.75, 4 - 2)));
  // Without token texts nothing can be recognised as a breaker.
  expect_penalties(dry_penalties(params(2), h, nullptr), only(d, 0.8 * std::pow(1.75, 4 - 2)));
}

TEST(dry, a_breaker_token_is_never_penalized) {
  // "a b \n c a b": "a b" was followed by "\n", a breaker: exempt. Same for a token containing ":".
  expect_penalties(dry_penalties(params(2), {a, b, nl, c, a, b}), only(nl, 0.0));
  expect_penalties(dry_penalties(params(2, {}), {a, b, nl, c, a, b}), only(nl, 0.8));
  expect_penalties(dry_penalties(params(2), {a, b, colon_word, d, a, b}), only(colon_word, 0.0));
}

TEST(dry, breakers_may_span_several_tokens) {
  // "a b c d x a b c d": "a b c d" (n = 4) was followed by x. With the breaker "ab", the text "ab"
  // spread over tokens a and b breaks the match, leaving "c d" (n = 2).
  const std::vector<int32_t> h = {a, b, c, d, x, a, b, c, d};
  expect_penalties(dry_penalties(params(2, {"ab"}), h), only(x, 0.8 * std::pow(1.75, 2 - 2)));
  expect_penalties(dry_penalties(params(2, {"ba"}), h), only(x, 0.8 * std::pow(1.75, 4 - 2)));
  // The earlier occurrence is cut too: in "x a b c y a b c" the breaker "xa" covers the first a,
  // so the earlier "a b c" only matches as "b c" (n = 2) before y.
  expect_penalties(dry_penalties(params(2, {"xa"}), {x, a, b, c, y, a, b, c}), only(y, 0.8 * std::pow(1.75, 2 - 2)));
  // "xa" spans x and the second a: the match keeps only "b c d" (n = 3); x itself is no breaker.
  expect_penalties(dry_penalties(params(2, {"xa"}), h), only(x, 0.8 * std::pow(1.75, 3 - 2)));
}

TEST(dry, looks_only_at_the_last_n_tokens_and_reset_forgets) {
  const std::vector<int32_t> h = {a, b, c, d, a, b, c};
  auto p = params(2);
  p.penalty_last_n = 4;  // "d a b c": no earlier c
  expect_penalties(dry_penalties(p, h), only(d, 0.0));
  p.penalty_last_n = 7;
  expect_penalties(dry_penalties(p, h), only(d, 1.4));
  p.penalty_last_n = 0;  // off
  expect_penalties(dry_penalties(p, h), only(d, 0.0));

  auto s = make_dry(params(2), vocab_text());
  for (int32_t id : h) s->accept(id);
  s->reset();
  for (int32_t id : {a, b, c}) s->accept(id);
  EXPECT_EQ(logit_of(run_stage(*s, std::vector<float>(n_vocab, 0.0f)), d), 0.0f);
}

TEST(dry, very_long_repeats_give_a_huge_but_finite_penalty) {
  auto s = make_dry(params(2), vocab_text());
  for (int i = 0; i < 400; ++i) s->accept(a);  // n = 399: 1.75^397 would overflow a float
  const float l = logit_of(run_stage(*s, std::vector<float>(n_vocab, 0.0f)), a);
  EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(l, -1e37f);
}

}  // namespace
}  // namespace glia::test
