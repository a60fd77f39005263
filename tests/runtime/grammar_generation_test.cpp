// Constrained generation on a real model (the Brown Llama): whatever the sampler settings, the text
// generated is in the grammar, complete when the model ends it, and the same with a draft model.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "glia/session.h"
#include "sampler/grammar/constraint.h"
#include "test_support.h"

namespace glia {
namespace {

std::unique_ptr<session> open_brown(const std::string& file) {
  session_options o;
  o.model_path = test::testdata("models/" + file);
  o.n_threads = 2;
  o.n_ctx = 256;
  auto s = session::create(o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? std::move(*s) : nullptr;
}

struct constrained_run {
  std::string text;
  generation_stats stats;
};

constrained_run run_constrained(session& s, const std::string& prompt, sampler_params sp, int n_predict, session* draft = nullptr,
                                float draft_p_min = 0.75f) {
  sampler smp(sp, [&s](int32_t id) { return s.token_text(id); }, s.grammar_vocab());
  auto ids = s.tokenize(prompt, true);
  EXPECT_TRUE(ids.is_ok());
  generate_options go;
  go.n_predict = n_predict;
  go.draft = draft;
  go.draft_p_min = draft_p_min;
  constrained_run out;
  status st = s.generate(*ids, go, smp, [&](std::string_view t) {
    out.text += t;
    return true;
  }, &out.stats);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return out;
}

sampler_params with_grammar(grammar::compiled_ptr g, float temp, uint64_t seed) {
  sampler_params p;
  p.temperature = temp;
  p.seed = seed;
  p.grammar = std::move(g);
  return p;
}

// A grammar the model would not follow on its own: a fixed shape of lower-case words.
constexpr std::string_view words_gbnf = R"(root ::= "The " word (" " word){2,5} "." | "It " word "."
word ::= [a-z]{1,12})";

TEST(GrammarGeneration, TextStaysInTheGrammarAndEndsComplete) {
  auto s = open_brown("brown-q8_0.gguf");
  ASSERT_TRUE(s);
  auto g = grammar::from_gbnf(words_gbnf);
  ASSERT_TRUE(g.is_ok()) << g.message();
  for (float temp : {0.0f, 0.8f, 1.5f})
    for (uint64_t seed : {1u, 2u, 3u}) {
      constrained_run r = run_constrained(*s, "The jury said that", with_grammar(*g, temp, seed), 120);
      EXPECT_TRUE(grammar::is_prefix(**g, r.text)) << r.text;
      if (r.stats.reason == stop_reason::end_of_generation) {
        EXPECT_TRUE(grammar::matches(**g, r.text)) << r.text;
      }
      // The grammar ends in at most 6 words of 12 letters: the model has to stop.
      EXPECT_EQ(r.stats.reason, stop_reason::end_of_generation) << r.text;
    }
}

TEST(GrammarGeneration, GrammarCompleteWithEndBannedStopsThere) {
  auto s = open_brown("brown-q8_0.gguf");
  ASSERT_TRUE(s);
  auto g = grammar::from_gbnf(R"(root ::= "yes" | "no")");
  ASSERT_TRUE(g.is_ok());
  sampler_params p = with_grammar(*g, 0.0f, 0);
  s->forbid_end_of_generation(p);  // --ignore-eos: the grammar has nothing more, so generation still ends
  constrained_run r = run_constrained(*s, "Did the jury agree?", p, 32);
  EXPECT_TRUE(r.text == "yes" || r.text == "no") << r.text;
  EXPECT_EQ(r.stats.reason, stop_reason::end_of_generation);
}

// Every token that could begin the grammar's text banned: generation ends at once, reported as a
// dead end rather than as the model's own end.
TEST(GrammarGeneration, BannedIntoADeadEnd) {
  auto s = open_brown("brown-q8_0.gguf");
  ASSERT_TRUE(s);
  auto g = grammar::from_gbnf(R"(root ::= "x" [0-9]+)");
  ASSERT_TRUE(g.is_ok());
  sampler_params p = with_grammar(*g, 0.0f, 0);
  const auto vocab = s->grammar_vocab();
  // Digits banned: after "x" nothing can follow.
  for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
    const std::string& piece = vocab->piece(id);
    if (!piece.empty() && (std::isdigit(uint8_t(piece[0])) || (piece[0] == 'x' && piece.size() > 1))) p.logit_bias[id] = -INFINITY;
  }
  constrained_run r = run_constrained(*s, "It was", p, 20);
  EXPECT_EQ(r.text, "x");
  EXPECT_EQ(r.stats.reason, stop_reason::grammar_dead_end) << r.text;
  for (int32_t id = 0; id < vocab->n_vocab(); ++id)
    if (!vocab->piece(id).empty() && vocab->piece(id)[0] == 'x') p.logit_bias[id] = -INFINITY;
  constrained_run none = run_constrained(*s, "It was", p, 20);
  EXPECT_EQ(none.text, "");
  EXPECT_EQ(none.stats.reason, stop_reason::grammar_dead_end);
}

TEST(GrammarGeneration, SameTextWithADraftModel) {
  auto target = open_brown("brown-f32.gguf");
  auto draft = open_brown("brown-q8_0.gguf");
  ASSERT_TRUE(target && draft);
  auto g = grammar::from_gbnf(words_gbnf);
  ASSERT_TRUE(g.is_ok());
  for (uint64_t seed : {5u, 6u}) {
    const sampler_params p = with_grammar(*g, seed == 5 ? 0.0f : 0.9f, seed);
    constrained_run plain = run_constrained(*target, "It was", p, 48);
    constrained_run drafted = run_constrained(*target, "It was", p, 48, draft.get());
    EXPECT_EQ(plain.text, drafted.text);
    EXPECT_EQ(plain.stats.reason, drafted.stats.reason);
  }
}

// The draft proposes inside the grammar too: the same model as its own draft, greedy, has every
// proposal accepted (a draft blind to the grammar proposed text the grammar then refused).
TEST(GrammarGeneration, ADraftProposesInsideTheGrammar) {
  auto target = open_brown("brown-q8_0.gguf");
  auto draft = open_brown("brown-q8_0.gguf");
  ASSERT_TRUE(target && draft);
  auto g = grammar::from_json_schema_text(R"({"type": "object", "properties": {"said": {"type": "string"}, "n": {"type": "integer"}},
                                               "required": ["said", "n"]})");
  ASSERT_TRUE(g.is_ok()) << g.message();
  const sampler_params p = with_grammar(*g, 0.0f, 1);
  constrained_run plain = run_constrained(*target, "The jury said", p, 60);
  constrained_run drafted = run_constrained(*target, "The jury said", p, 60, draft.get(), 0.0f);
  EXPECT_EQ(plain.text, drafted.text);
  ASSERT_GT(drafted.stats.n_drafted, 30) << drafted.text;
  EXPECT_EQ(drafted.stats.n_accepted, drafted.stats.n_drafted) << drafted.text;
}

TEST(GrammarGeneration, JsonSchemaGivesValidJson) {
  auto s = open_brown("brown-q8_0.gguf");
  ASSERT_TRUE(s);
  auto g = grammar::from_json_schema_text(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 20},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3}
    },
    "required": ["name", "age", "tags"]
  })");
  ASSERT_TRUE(g.is_ok()) << g.message();
  for (uint64_t seed : {1u, 2u, 3u, 4u}) {
    constrained_run r = run_constrained(*s, "The jury said that", with_grammar(*g, 1.0f, seed), 200);
    ASSERT_EQ(r.stats.reason, stop_reason::end_of_generation) << r.text;
    const auto j = nlohmann::json::parse(r.text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.text;
    ASSERT_TRUE(j.is_object()) << r.text;
    EXPECT_TRUE(j["name"].is_string()) << r.text;
    EXPECT_LE(nlohmann::json(j["name"]).get<std::string>().size(), 20u * 4);
    ASSERT_TRUE(j["age"].is_number_integer()) << r.text;
    EXPECT_GE(j["age"].get<int64_t>(), 0);
    EXPECT_LE(j["age"].get<int64_t>(), 150);
    ASSERT_TRUE(j["tags"].is_array()) << r.text;
    EXPECT_LE(j["tags"].size(), 3u);
    for (const auto& t : j["tags"]) EXPECT_TRUE(t == "red" || t == "green" || t == "blue") << r.text;
    EXPECT_EQ(j.size(), 3u) << r.text;
  }
}

}  // namespace
}  // namespace glia
