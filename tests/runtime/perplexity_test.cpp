// glia perplexity against llama.cpp's logits: for a chunk that is one of the pack's golden prompts
// (every position stored), the perplexity over its second half computed from the golden logits is
// the oracle; ours may differ only by what the golden tolerance allows (|d log-softmax| <= 2 max
// |d logit|, so the perplexity within a factor exp(2 tol)).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../golden/golden_pack.h"
#include "glia/session.h"
#include "runtime/perplexity.h"

namespace glia {
namespace {

std::unique_ptr<session> open_for_perplexity(const std::string& model, int n_ctx) {
  session_options o;
  o.model_path = test::testdata("models/" + model);
  o.n_threads = 2;
  o.n_ctx = n_ctx;
  o.kv_type = "f32";
  auto s = session::create(o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? std::move(*s) : nullptr;
}

double golden_nll(const float* logits, int64_t n_vocab, int32_t id) {
  double top = logits[0], sum = 0.0;
  for (int64_t v = 0; v < n_vocab; ++v) top = std::max(top, double(logits[v]));
  for (int64_t v = 0; v < n_vocab; ++v) sum += std::exp(double(logits[v]) - top);
  return std::log(sum) - (double(logits[id]) - top);
}

class perplexity_golden : public ::testing::TestWithParam<std::string> {};

TEST_P(perplexity_golden, first_chunk_matches_llama_cpp_logits) {
  const std::string stem = GetParam();
  const auto g = test::read_golden(stem);
  const test::json* full = nullptr;
  for (const auto& p : g.manifest["prompts"])
    if (p["stored_positions"].size() == p["ids"].size() && p["ids"].size() >= 8) full = &p;
  if (!full) GTEST_SKIP() << stem << " has no prompt with every position stored";
  const auto ids = (*full)["ids"].get<std::vector<int32_t>>();
  const int n_ctx = int(ids.size());
  auto s = open_for_perplexity(g.manifest["model"].get<std::string>().substr(std::string("models/").size()), n_ctx);
  ASSERT_TRUE(s);

  // The oracle: llama.cpp's rows first..n_ctx-2 scoring the next token.
  const int first = n_ctx / 2, row0 = (*full)["row_offset"].get<int>();
  double nll = 0.0, nll2 = 0.0;
  int n = 0;
  for (int j = first; j < n_ctx - 1; ++j) {
    const double v = golden_nll(g.logits.data() + int64_t(row0 + j) * g.n_vocab, g.n_vocab, ids[size_t(j) + 1]);
    nll += v;
    nll2 += v * v;
    ++n;
  }
  const double want = std::exp(nll / n);

  std::vector<int32_t> tokens = ids;
  tokens.insert(tokens.end(), ids.begin(), ids.end());  // a second chunk, as the tool requires two
  perplexity_options po;
  po.n_ctx = n_ctx;
  po.n_chunks = 1;
  po.bos_first = false;  // the golden prompt as it is (not every one starts with BOS)
  auto r = perplexity(*s, tokens, po);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->n_chunks, 1);
  EXPECT_EQ(r->n_scored, n);
  const double tol = test::tolerance_for(stem).max_abs;
  EXPECT_LE(std::fabs(std::log(r->ppl / want)), 2.0 * tol) << stem << ": ours " << r->ppl << ", from llama.cpp's logits " << want;
  // The same ± llama-perplexity prints: ppl * sd / sqrt(n - 1).
  const double mean = nll / n, sd = std::sqrt(std::max(0.0, nll2 / n - mean * mean));
  EXPECT_NEAR(r->ppl_error, want * sd / std::sqrt(double(n - 1)), 0.05 * want * sd + 4.0 * tol * want) << stem;
}

INSTANTIATE_TEST_SUITE_P(pack, perplexity_golden,
                         ::testing::Values("brown-f32", "brown-q8_0", "llama-untied-F16", "qwen2-F16", "qwen3-F16", "gemma-F16",
                                           "gemma2-F16", "gemma3-F16"),
                         [](const auto& info) { return test::param_name(info.param); });

// Several chunks, BOS replacing each chunk's first token, the text's tokens as llama-perplexity's
// -f gives them: against a direct computation from fresh contexts, for any scoring thread count.
TEST(perplexity, chunks_from_fresh_contexts_with_bos_first) {
  auto s = open_for_perplexity("brown-f32.gguf", 64);
  ASSERT_TRUE(s);
  const std::string text =
      "It was a cold morning in the city, and the old man walked slowly down the street to his office. He had "
      "worked there for thirty years, and in all that time he had never once been late. The clerks said that he "
      "was a hard man, but a fair one, and they were not afraid of him.\n";
  auto ids = perplexity_tokens(*s, text);
  ASSERT_TRUE(ids.is_ok()) << ids.message();
  const auto bos = s->added_bos();
  ASSERT_TRUE(bos.has_value());
  EXPECT_EQ(ids->front(), *bos);
  EXPECT_EQ(*ids, *perplexity_tokens(*s, text.substr(0, text.size() - 1)));  // one trailing newline dropped
  EXPECT_NE(ids->back(), 2);  // no EOS

  const int n_ctx = 20;
  double nll = 0.0;
  int64_t n = 0;
  std::vector<double> running;
  std::vector<float> logits;
  for (size_t c = 0; c + n_ctx <= ids->size(); c += n_ctx) {
    std::vector<int32_t> chunk(ids->begin() + std::ptrdiff_t(c), ids->begin() + std::ptrdiff_t(c + n_ctx));
    chunk[0] = *bos;
    s->reset();
    ASSERT_TRUE(s->eval(chunk, true, logits).is_ok());
    for (int j = n_ctx / 2; j < n_ctx - 1; ++j, ++n)
      nll += golden_nll(logits.data() + int64_t(j) * s->n_vocab(), s->n_vocab(), chunk[size_t(j) + 1]);
    running.push_back(std::exp(nll / double(n)));
  }
  for (int threads : {1, 3}) {
    perplexity_options po;
    po.n_ctx = n_ctx;
    po.n_threads = threads;
    auto r = perplexity(*s, *ids, po);
    ASSERT_TRUE(r.is_ok()) << r.message();
    ASSERT_EQ(r->running.size(), running.size());
    for (size_t i = 0; i < running.size(); ++i) EXPECT_NEAR(r->running[i], running[i], 1e-9 * running[i]) << "chunk " << i;
  }
}

TEST(perplexity, chunks_run_and_refusals) {
  auto s = open_for_perplexity("brown-f32.gguf", 64);
  ASSERT_TRUE(s);
  auto ids = s->tokenize("The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election "
                         "produced no evidence that any irregularities took place. The jury further said in term-end "
                         "presentments that the City Executive Committee, which had over-all charge of the election, deserves "
                         "the praise and thanks of the City of Atlanta for the manner in which the election was conducted.",
                         true);
  ASSERT_TRUE(ids.is_ok());
  ASSERT_GE(ids->size(), 64u);
  perplexity_options po;
  po.n_ctx = 16;
  auto r = perplexity(*s, *ids, po);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->n_chunks, int(ids->size() / 16));
  EXPECT_EQ(r->n_scored, int64_t(r->n_chunks) * 7);
  ASSERT_EQ(r->running.size(), size_t(r->n_chunks));
  EXPECT_EQ(r->running.back(), r->ppl);
  EXPECT_GT(r->ppl, 1.0);
  EXPECT_LT(r->ppl, double(s->n_vocab()));  // better than chance on English it was trained on
  po.n_chunks = 2;
  auto two = perplexity(*s, *ids, po);
  ASSERT_TRUE(two.is_ok());
  EXPECT_EQ(two->running[1], r->running[1]);  // each chunk from an empty context
  po.n_ctx = int(ids->size());
  auto short_text = perplexity(*s, *ids, po);
  ASSERT_FALSE(short_text.is_ok());
  EXPECT_NE(short_text.message().find("needs at least"), std::string::npos) << short_text.message();
  po.n_ctx = 16;
  po.n_chunks = 0;
  auto none = perplexity(*s, *ids, po);
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.message().find("0 chunks"), std::string::npos) << none.message();
  po.n_chunks = -1;
  po.n_ctx = 70;  // two chunks of the text, but more than the context
  auto too_long = perplexity(*s, *ids, po);
  ASSERT_FALSE(too_long.is_ok());
  EXPECT_NE(too_long.message().find("do not fit the context of 64"), std::string::npos) << too_long.message();
}

}  // namespace
}  // namespace glia
