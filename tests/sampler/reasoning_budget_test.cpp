// The reasoning budget: tokens inside a reasoning are counted, and once the budget is spent the
// closing tokens are forced, whatever the logits; a reply that does not reason is left alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sampler/grammar/constraint.h"
#include "sampler/reasoning_budget.h"
#include "sampler/sampler.h"

namespace glia {
namespace {

// ids: 0 "a", 1 "b", 2 " ", 3 "<think>", 4 "</think>", 5 "<th", 6 "ink>", 7 "</thi", 8 "nk>",
// 9 "\xE2\x82" (the first two bytes of "€"), 10 "\xAC" (its last), 11 "\n", 12 "Enough.", 13 "{",
// 14 "}", 15 end.
const std::vector<std::string> texts = {"a", "b", " ", "<think>", "</think>", "<th", "ink>", "</thi", "nk>", "\xE2\x82", "\xAC", "\n",
                                        "Enough.", "{", "}", ""};
std::string text_of(int32_t id) { return texts.at(size_t(id)); }

reasoning_limit limit(int budget, bool inside = false, std::vector<int32_t> forced = {4}) {
  return reasoning_limit{"<think>", "</think>", inside, "", budget, std::move(forced)};
}

// Feeds tokens the model chose; each must not have been forced.
void feed(reasoning_budget& b, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    ASSERT_EQ(b.forced(), -1) << "before " << id;
    b.accept(id);
  }
}

TEST(ReasoningBudget, ForcesTheCloseOnceTheBudgetIsSpent) {
  reasoning_budget b(limit(3), text_of);
  feed(b, {2, 3, 0, 1});  // " <think>ab": two of three
  EXPECT_EQ(b.tokens(), 4);
  feed(b, {0});
  EXPECT_EQ(b.forced(), 4);
  b.accept(4);
  EXPECT_EQ(b.tokens(), 6);  // the blank, the open tag, three, the close tag
  EXPECT_EQ(b.forced(), -1);  // the answer is the model's
  b.accept(0);
  b.accept(3);  // a later <think> in the answer is text
  for (int i = 0; i < 5; ++i) b.accept(0);
  EXPECT_EQ(b.forced(), -1);
  EXPECT_EQ(b.tokens(), 6);
}

TEST(ReasoningBudget, AClosingMessageComesBeforeTheTag) {
  reasoning_budget b(limit(1, false, {11, 12, 4}), text_of);
  feed(b, {3, 0});
  for (int32_t want : {11, 12, 4}) {
    ASSERT_EQ(b.forced(), want);
    b.accept(want);
  }
  EXPECT_EQ(b.forced(), -1);
  EXPECT_EQ(b.tokens(), 5);
}

TEST(ReasoningBudget, AReasoningClosedInTimeIsNotTouched) {
  reasoning_budget b(limit(3), text_of);
  feed(b, {3, 0, 7, 8, 0, 0, 0, 0});  // the close tag in two pieces, within the budget
  EXPECT_EQ(b.tokens(), 4);
}

TEST(ReasoningBudget, AReplyThatDoesNotOpenTheReasoningHasNone) {
  reasoning_budget b(limit(0), text_of);
  feed(b, {2, 11, 0, 3, 0, 0});  // blanks, then "a": the reply is an answer; its <think> is text
  EXPECT_EQ(b.tokens(), 0);
  // The open tag in pieces is still the open tag.
  reasoning_budget pieces(limit(1), text_of);
  feed(pieces, {5, 6, 0});
  EXPECT_EQ(pieces.forced(), 4);
  EXPECT_EQ(pieces.tokens(), 3);
  // A piece that only starts like the tag and then leaves it is an answer.
  reasoning_budget almost(limit(0), text_of);
  feed(almost, {5, 0, 0});
  EXPECT_EQ(almost.tokens(), 0);
}

TEST(ReasoningBudget, APromptThatOpenedItStartsTheCountAtTheReply) {
  reasoning_budget zero(limit(0, true), text_of);
  EXPECT_EQ(zero.forced(), 4);  // nothing to think
  zero.accept(4);
  EXPECT_EQ(zero.tokens(), 1);
  EXPECT_EQ(zero.forced(), -1);

  reasoning_budget two(limit(2, true), text_of);
  feed(two, {0, 1});
  EXPECT_EQ(two.forced(), 4);
  // The text before the reply may end with the close tag's start, which the reply's first token ends.
  reasoning_budget continued(reasoning_limit{"<think>", "</think>", true, "</thi", 5, {4}}, text_of);
  feed(continued, {8, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(continued.tokens(), 1);
}

TEST(ReasoningBudget, ABudgetSpentInsideACharacterWaitsForItsLastByte) {
  reasoning_budget b(limit(2), text_of);
  feed(b, {3, 0, 9});
  EXPECT_EQ(b.forced(), -1);  // "a\xE2\x82": the euro sign is not whole yet
  b.accept(10);
  EXPECT_EQ(b.forced(), 4);
  EXPECT_EQ(b.tokens(), 4);
}

TEST(ReasoningBudget, ResetStartsAnotherReply) {
  reasoning_budget b(limit(1), text_of);
  feed(b, {3, 0});
  b.accept(b.forced());
  b.reset();
  EXPECT_EQ(b.tokens(), 0);
  feed(b, {3, 1});
  EXPECT_EQ(b.forced(), 4);
}

TEST(ReasoningBudget, WithoutABudgetTheTokensAreOnlyCounted) {
  reasoning_budget b(limit(-1), text_of);
  for (int i = 0; i < 100; ++i) feed(b, {i == 0 ? 3 : 0});
  EXPECT_EQ(b.tokens(), 100);
}

// A sampler without reasoning tags counts nothing, before and after a reset.
TEST(ReasoningBudget, WithoutTagsNothingIsFollowed) {
  reasoning_budget none;
  none.reset();
  none.accept(3);
  none.accept(0);
  EXPECT_EQ(none.forced(), -1);
  EXPECT_EQ(none.tokens(), 0);
}

TEST(ReasoningBudget, RefusesWhatCannotWork) {
  EXPECT_THROW(reasoning_budget(limit(3, false, {}), text_of), std::invalid_argument);
  EXPECT_THROW(reasoning_budget(reasoning_limit{"", "</think>", false, "", -1, {}}, text_of), std::invalid_argument);
  EXPECT_THROW(reasoning_budget(limit(-1), nullptr), std::invalid_argument);
}

// In the sampler: the forced tokens are picked against the logits, for any temperature, and the
// reasoning's tokens are reported.
TEST(ReasoningBudget, TheSamplerPicksTheForcedTokens) {
  for (float temp : {0.0f, 1.5f}) {
    sampler_params p;
    p.temperature = temp;
    p.seed = 7;
    p.reasoning = limit(2, true, {11, 4});
    sampler s(p, text_of);
    std::vector<float> logits(texts.size(), 0.0f);
    logits[0] = 20.0f;  // "a" by far
    std::vector<int32_t> got;
    for (int i = 0; i < 6; ++i) {
      got.push_back(s.sample(logits));
      s.accept(got.back());
    }
    EXPECT_EQ(got, (std::vector<int32_t>{0, 0, 11, 4, 0, 0})) << "temperature " << temp;
    EXPECT_EQ(s.reasoning_tokens(), 4);
    s.reset();
    EXPECT_EQ(s.reasoning_tokens(), 0);
    EXPECT_EQ(s.sample(logits), 0);
  }
}

// With a grammar that waits for the reasoning (sampler_params::grammar_after), the forced close ends
// the reasoning for the grammar too: the answer is constrained from the next token.
TEST(ReasoningBudget, AForcedCloseStartsTheConstrainedAnswer) {
  sampler_params p;
  p.temperature = 0.0f;
  auto g = grammar::from_gbnf(R"(root ::= "{" [ab]* "}")");
  ASSERT_TRUE(g.is_ok()) << g.message();
  p.grammar = *g;
  p.grammar_after = grammar_after_reasoning{-1};
  p.reasoning = limit(1, true);
  std::vector<std::string> pieces = texts;
  pieces[3] = pieces[4] = "";
  sampler s(p, text_of, std::make_shared<grammar::token_vocab>(pieces, std::vector<int32_t>{15}));
  std::vector<float> logits(texts.size(), 0.0f);
  logits[0] = 20.0f;
  EXPECT_EQ(s.sample(logits), 0);  // free inside the reasoning
  s.accept(0);
  EXPECT_EQ(s.sample(logits), 4);  // spent: closed
  s.accept(4);
  EXPECT_EQ(s.sample(logits), 13);  // the grammar's "{" over the model's "a"
}

}  // namespace
}  // namespace glia
