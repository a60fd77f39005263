// The sampler with a grammar: banned tokens are never picked, greedy or drawn; prompt tokens do not
// move the grammar; a grammar that cannot go on ends generation with the end token; a grammar that
// waits for a reasoning model's thinking leaves it free and holds after its close tag.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "sampler/grammar/constraint.h"
#include "sampler/sampler.h"

namespace glia {
namespace {

// ids: 0 "a", 1 "b", 2 "c", 3 "ab", 4 "</s>" (end), 5 "x"
std::shared_ptr<const grammar::token_vocab> abc_vocab() {
  return std::make_shared<grammar::token_vocab>(std::vector<std::string>{"a", "b", "c", "ab", "", "x"}, std::vector<int32_t>{4});
}

sampler_params abc_params(std::string_view gbnf, float temp) {
  sampler_params p;
  p.temperature = temp;
  p.seed = 7;
  auto g = grammar::from_gbnf(gbnf);
  EXPECT_TRUE(g.is_ok()) << g.message();
  p.grammar = *g;
  return p;
}

TEST(SamplerGrammar, GreedyTakesTheBestAllowedToken) {
  sampler s(abc_params(R"(root ::= "a" "b"* "c")", 0.0f), nullptr, abc_vocab());
  const std::vector<float> logits = {1.0f, 5.0f, 2.0f, 3.0f, 9.0f, 8.0f};
  EXPECT_EQ(s.sample(logits), 3);  // "ab" (b, x and the end are not allowed first)
  s.accept(3);
  EXPECT_EQ(s.sample(logits), 1);  // "b"
  s.accept(1);
  s.accept(2);                     // "c": complete
  EXPECT_EQ(s.sample(logits), 4);  // only the end is left
}

TEST(SamplerGrammar, DrawsOnlyAllowedTokens) {
  sampler s(abc_params(R"(root ::= ("a" | "c")+)", 1.0f), nullptr, abc_vocab());
  const std::vector<float> logits = {0.0f, 3.0f, 0.0f, 3.0f, 0.0f, 3.0f};
  int seen[6] = {};
  for (int i = 0; i < 2000; ++i) ++seen[s.sample(logits)];
  EXPECT_EQ(seen[1] + seen[3] + seen[5] + seen[4], 0);  // the end is not allowed before a first token
  EXPECT_GT(seen[0], 700);
  EXPECT_GT(seen[2], 700);
}

TEST(SamplerGrammar, PromptTokensDoNotMoveTheGrammar) {
  sampler s(abc_params(R"(root ::= "b")", 0.0f), nullptr, abc_vocab());
  s.accept_prompt(0);  // "a" in the prompt: not the generated text's
  s.accept_prompt(5);
  const std::vector<float> logits = {9.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(s.sample(logits), 1);
  s.accept(1);
  EXPECT_EQ(s.sample(logits), 4);
  s.reset();  // a new generation starts the grammar again
  EXPECT_EQ(s.sample(logits), 1);
}

TEST(SamplerGrammar, AGrammarThatCannotGoOnEndsGeneration) {
  // No token spells "z", and the end is banned: nothing can be picked.
  sampler_params p = abc_params(R"(root ::= "z")", 0.0f);
  sampler s(p, nullptr, abc_vocab());
  EXPECT_EQ(s.sample(std::vector<float>{1, 2, 3, 4, 5, 6}), 4);
  EXPECT_TRUE(s.grammar_dead_end());  // ended, but the text is not in the grammar
  p.logit_bias[4] = -INFINITY;
  sampler banned(p, nullptr, abc_vocab());
  EXPECT_EQ(banned.sample(std::vector<float>{1, 2, 3, 4, 5, 6}), 4);
  EXPECT_TRUE(banned.grammar_dead_end());
  // Complete, with the end banned: generation ends there, and that is no dead end.
  sampler_params done = abc_params(R"(root ::= "a")", 0.0f);
  done.logit_bias[4] = -INFINITY;
  sampler finished(done, nullptr, abc_vocab());
  finished.accept(0);
  EXPECT_EQ(finished.sample(std::vector<float>{1, 2, 3, 4, 5, 6}), 4);
  EXPECT_FALSE(finished.grammar_dead_end());
}

// Greedy picks without the full mask (checking the best tokens' texts) give the masked pick: the
// best allowed token, across random logits along random walks, with many disallowed tokens ranked
// first (past the few checks, the full mask decides).
TEST(SamplerGrammar, GreedyShortcutEqualsTheMaskedPick) {
  std::vector<std::string> pieces = {"", "{", "}", "\"", "a", "b", "ab", ":", " ", ",", "1", "12", "é", "\xC3", "\xA9", "x", "[", "]"};
  for (int i = 0; i < 40; ++i) pieces.push_back("zz" + std::to_string(i));  // never allowed
  const int32_t n = int32_t(pieces.size());
  pieces[0] = "";
  auto vocab = std::make_shared<grammar::token_vocab>(pieces, std::vector<int32_t>{0});
  auto g = grammar::from_gbnf(R"(root ::= "{" ("\"" [a-zé]{0,6} "\":" " "? [0-9]{1,3} ("," " "?)?){0,4} "}")");
  ASSERT_TRUE(g.is_ok()) << g.message();
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  for (int run = 0; run < 30; ++run) {
    sampler_params p;
    p.temperature = 0.0f;
    p.grammar = *g;
    sampler fast(p, nullptr, vocab);
    grammar::token_matcher oracle(*g, vocab);
    for (int step = 0; step < 30; ++step) {
      std::vector<float> scores(static_cast<size_t>(n));
      for (int32_t id = 0; id < n; ++id) scores[size_t(id)] = noise(rng) + (pieces[size_t(id)].starts_with("zz") && run % 2 ? 8.0f : 0.0f);
      int32_t want = -1;
      for (int32_t id = 0; id < n; ++id)
        if (oracle.is_allowed(id) && (want < 0 || scores[size_t(id)] > scores[size_t(want)])) want = id;
      const int32_t got = fast.sample(scores);
      ASSERT_EQ(got, want < 0 ? 0 : want) << "run " << run << " step " << step;
      if (got == 0) break;
      fast.accept(got);
      ASSERT_TRUE(oracle.accept(got));
    }
  }
}

// A reasoning model's vocabulary: ids 0 "a", 1 "b", 2 "{", 3 "}", 4 end, 5 "<think>", 6 "</think>"
// (control tokens: no grammar text), 7 "</", 8 "think>" (the close tag in two plain pieces), 9
// "think>\n{a" (the close tag's end and the answer's start in one piece), 10 "think>}".
const std::vector<std::string> think_texts = {"a", "b", "{", "}", "", "<think>", "</think>", "</", "think>", "think>\n{a", "think>}"};

std::shared_ptr<const grammar::token_vocab> think_vocab() {
  std::vector<std::string> pieces = think_texts;
  pieces[5] = pieces[6] = "";
  return std::make_shared<grammar::token_vocab>(pieces, std::vector<int32_t>{4});
}

// The grammar after a reasoning between <think> and </think>: open_id may open it; inside, the prompt
// did (`before`: the text before the reply).
sampler think_sampler(int32_t open_id, bool inside, float temp = 0.0f, std::string before = "") {
  sampler_params p = abc_params(R"(root ::= "{" [ab]* "}")", temp);
  p.grammar_after = grammar_after_reasoning{open_id};
  p.reasoning = reasoning_limit{"<think>", "</think>", inside, std::move(before), -1, {}};
  return sampler(p, [](int32_t id) { return think_texts.at(size_t(id)); }, think_vocab());
}

// Logits that rank `best` first and the rest in id order below it.
std::vector<float> preferring(int32_t best) {
  std::vector<float> l(think_texts.size());
  for (size_t i = 0; i < l.size(); ++i) l[i] = -float(i);
  l[size_t(best)] = 10.0f;
  return l;
}

TEST(SamplerGrammar, AfterReasoningTheReplyMayOpenItFirst) {
  sampler s = think_sampler(5, false);
  EXPECT_EQ(s.grammar_matcher(), nullptr);  // the first token is not the grammar's alone
  EXPECT_EQ(s.sample(preferring(0)), 2);    // "a" is neither the grammar's nor the opening: "{"
  EXPECT_EQ(s.sample(preferring(5)), 5);    // "<think>" opens the reasoning
  s.accept(5);
  for (int32_t free : {0, 3, 1}) EXPECT_EQ(s.sample(preferring(free)), free);  // inside: anything...
  EXPECT_EQ(s.sample(preferring(4)), 0);  // ...but the end: the answer asked for has not come yet
  s.accept(0);
  s.accept(6);                           // "</think>": the grammar holds from the next token
  EXPECT_NE(s.grammar_matcher(), nullptr);
  EXPECT_EQ(s.sample(preferring(0)), 2);
  s.accept(2);
  EXPECT_EQ(s.sample(preferring(5)), 0);  // no second opening: "a" is the best the grammar allows
  EXPECT_EQ(s.sample(preferring(4)), 0);  // nor an end before "}"
  s.accept(3);
  EXPECT_EQ(s.sample(preferring(0)), 4);
  s.reset();  // a new reply may open it again
  EXPECT_EQ(s.sample(preferring(5)), 5);
}

TEST(SamplerGrammar, AfterReasoningAFirstTokenOutsideItConstrainsAtOnce) {
  sampler s = think_sampler(5, false);
  s.accept(2);  // "{": the answer started, no reasoning
  EXPECT_EQ(s.sample(preferring(5)), 0);
  EXPECT_EQ(s.sample(preferring(6)), 0);
  // Without an opening token, the grammar holds from the first token.
  sampler none = think_sampler(-1, false);
  EXPECT_EQ(none.sample(preferring(5)), 2);
  EXPECT_NE(none.grammar_matcher(), nullptr);
}

TEST(SamplerGrammar, AfterReasoningThePromptOpenedItAndTheCloseComesInPieces) {
  for (float temp : {0.0f, 1.0f}) {
    sampler s = think_sampler(5, true, temp);
    EXPECT_EQ(s.sample(preferring(3)), 3);  // inside from the start
    s.accept(3);
    s.accept(7);  // "</"
    EXPECT_EQ(s.sample(preferring(1)), 1);
    s.accept(1);  // "</b": not the tag
    s.accept(7);
    s.accept(8);  // "</" "think>": closed
    EXPECT_EQ(s.sample(preferring(3)), 2);
    s.reset();
    EXPECT_EQ(s.sample(preferring(3)), 3);  // inside again
  }
}

// The token that ends the close tag may carry the answer's start: the grammar takes it from there
// (whitespace after the tag left out, as the reply's content leaves it out); a start outside the
// grammar is a dead end.
TEST(SamplerGrammar, AfterReasoningTheAnswerMayStartInTheClosingToken) {
  sampler s = think_sampler(5, true);
  s.accept(7);
  s.accept(9);  // "</" "think>\n{a": the answer so far is "{a"
  EXPECT_EQ(s.sample(preferring(2)), 0);  // no second "{": "a" is the best the grammar allows
  s.accept(3);
  EXPECT_EQ(s.sample(preferring(0)), 4);
  EXPECT_FALSE(s.grammar_dead_end());
  sampler broken = think_sampler(5, true);
  broken.accept(7);
  broken.accept(10);  // "}" cannot start "{...}"
  EXPECT_EQ(broken.sample(preferring(2)), 4);
  EXPECT_TRUE(broken.grammar_dead_end());
  broken.reset();
  EXPECT_EQ(broken.sample(preferring(3)), 3);
  EXPECT_FALSE(broken.grammar_dead_end());
}

// Continuing a text that ends with the close tag's start: the reply's first token may end the tag.
TEST(SamplerGrammar, AfterReasoningTheTextBeforeMayHoldTheTagsStart) {
  sampler s = think_sampler(5, true, 0.0f, "so </");
  EXPECT_EQ(s.sample(preferring(3)), 3);  // still inside
  s.accept(8);                            // "think>": "</" + "think>" closes it
  EXPECT_EQ(s.sample(preferring(3)), 2);
  s.reset();
  EXPECT_EQ(s.sample(preferring(3)), 3);  // and again after a reset
}

TEST(SamplerGrammar, AfterReasoningNeedsTheTokensTexts) {
  sampler_params p = abc_params(R"(root ::= "a")", 0.0f);
  p.grammar_after = grammar_after_reasoning{5};
  p.reasoning = reasoning_limit{"<think>", "</think>", false, "", -1, {}};
  EXPECT_THROW(sampler(p, nullptr, think_vocab()), std::invalid_argument);
}

TEST(SamplerGrammar, AGrammarNeedsTheVocabulary) {
  EXPECT_THROW(sampler(abc_params(R"(root ::= "a")", 0.0f)), std::invalid_argument);
}

}  // namespace
}  // namespace glia
