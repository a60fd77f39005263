// Scoring a prompt (completions' echo with logprobs) and several choices per request through a live
// glia serve on the Brown model: what lm-evaluation-harness and OpenAI's `n` ask of a server.
#include <gtest/gtest.h>

#include <map>

#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

class ServerScoring : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { srv = new server_process({"-m", test_model(), "--kv-type", "f32"}); }
  static void TearDownTestSuite() {
    delete srv;
    srv = nullptr;
  }
  void SetUp() override { ASSERT_NE(srv->port(), 0) << srv->log(); }
  static server_process* srv;
};
server_process* ServerScoring::srv = nullptr;

// echo with logprobs scores a prompt (lm-evaluation-harness's loglikelihood requests through the
// OpenAI API: echo, logprobs, max_tokens 0 or 1, the prompt as token ids): the prompt comes back as
// the text's start, its first token's logprob null, every other token's the model's log-probability
// given what precedes it: the same number a request for that next token alone reports. A prompt
// longer than the prefill chunk (128 tokens) is scored across chunks.
TEST_F(ServerScoring, EchoScoresThePrompt) {
  std::string text = "The jury said";
  for (int i = 0; i < 12; ++i) text += " that the city of Atlanta had a good election";
  auto ids_of = [&](const std::string& t) {
    auto r = post(*srv, "/tokenize", json{{"content", t}, {"add_special", true}});
    return r.json()["tokens"].get<std::vector<int64_t>>();
  };
  const std::vector<int64_t> ids = ids_of(text);
  ASSERT_GT(ids.size(), 160u);  // two prefill chunks of 128
  json req = {{"prompt", ids}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}, {"temperature", 0}};
  auto r = post(*srv, "/v1/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = r.json()["choices"][0];
  const json& lp = choice["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), ids.size());
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 0);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < ids.size(); ++i) {
    ASSERT_TRUE(lp["token_logprobs"][i].is_number()) << i;
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_LE(lp["top_logprobs"][i].size(), 3u);
  }
  EXPECT_EQ(choice["text"].get<std::string>().substr(0, 3), "<s>");  // token ids come back as their text
  // The oracle: the prefix alone, its next token forced by a bias, reports the model's logprob of it.
  for (size_t at : {size_t(1), size_t(100), size_t(150), ids.size() - 1}) {
    json next = {{"prompt", std::vector<int64_t>(ids.begin(), ids.begin() + std::ptrdiff_t(at))}, {"max_tokens", 1},
                 {"temperature", 0}, {"logprobs", 0}, {"logit_bias", {{std::to_string(ids[at]), 100}}}};
    auto o = post(*srv, "/v1/completions", next);
    ASSERT_EQ(o.status, 200) << o.body;
    EXPECT_NEAR(o.json()["choices"][0]["logprobs"]["token_logprobs"][0].get<double>(), lp["token_logprobs"][at].get<double>(), 1e-4) << at;
  }
  // A text prompt comes back as written, then the reply; offsets go on from the prompt's text.
  json gen = {{"prompt", "The jury said"}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 3}, {"temperature", 0}};
  auto g = post(*srv, "/v1/completions", gen);
  ASSERT_EQ(g.status, 200) << g.body;
  const std::string echoed = g.json()["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(echoed.starts_with("The jury said")) << echoed;
  const json gbody = g.json();
  const json& glp = gbody["choices"][0]["logprobs"];
  const size_t n_prompt = g.json()["usage"]["prompt_tokens"].get<size_t>();
  ASSERT_EQ(glp["tokens"].size(), n_prompt + 3);
  // Offsets run over the tokens' texts (as vLLM counts them), never backwards.
  size_t offset = 0;
  for (size_t i = 0; i < glp["tokens"].size(); ++i) {
    EXPECT_EQ(glp["text_offset"][i], offset) << i;
    offset += glp["tokens"][i].get<std::string>().size();  // ASCII here: bytes are characters
  }
  // A one-token prompt is a prefill chunk of one: its entry is there, null.
  auto one = post(*srv, "/v1/completions", json{{"prompt", {337}}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 1}, {"temperature", 0}});
  ASSERT_EQ(one.status, 200) << one.body;
  const json one_lp = one.json()["choices"][0]["logprobs"];
  ASSERT_EQ(one_lp["tokens"].size(), 2u) << one.body;
  EXPECT_TRUE(one_lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(one_lp["token_logprobs"][1].is_number());
  gen["stream"] = true;
  const stream_result sr = parse_stream(post(*srv, "/v1/completions", gen).body, false);
  EXPECT_TRUE(sr.done && sr.well_formed);
  EXPECT_EQ(sr.text, echoed);
  // A prompt that fills the context can be scored, and the one token a harness asks for after it
  // sampled (never evaluated); without echo it is too long.
  json full = {{"prompt", std::vector<int64_t>(256, 337)}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}};
  auto scored = post(*srv, "/v1/completions", full);
  ASSERT_EQ(scored.status, 200) << scored.body;
  EXPECT_EQ(scored.json()["choices"][0]["logprobs"]["tokens"].size(), 256u);
  full["max_tokens"] = 1;
  auto one_more = post(*srv, "/v1/completions", full);
  ASSERT_EQ(one_more.status, 200) << one_more.body;
  EXPECT_EQ(one_more.json()["choices"][0]["logprobs"]["tokens"].size(), 257u);
  full.erase("echo");
  EXPECT_EQ(post(*srv, "/v1/completions", full).status, 400);
  // The end token, when it is what comes after the prompt, has its entry too (as vLLM reports it).
  json ends = {{"prompt", {1, 337, 501}}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 1}, {"logit_bias", {{"2", 100}}}};
  auto ended = post(*srv, "/v1/completions", ends);
  ASSERT_EQ(ended.status, 200) << ended.body;
  const json ended_lp = ended.json()["choices"][0]["logprobs"];
  ASSERT_EQ(ended_lp["tokens"].size(), 4u) << ended.body;
  EXPECT_EQ(ended_lp["tokens"][3], "</s>");
  // Without logprobs, echo is the text only.
  gen.erase("stream");
  gen.erase("logprobs");
  auto plain = post(*srv, "/v1/completions", gen);
  EXPECT_EQ(plain.json()["choices"][0]["text"], echoed);
}

// Several choices in one request: n per prompt, several prompts (a list of strings or of token id
// lists, as lm-evaluation-harness batches them); choice p * n + k answers prompt p; at temperature
// 0 the n choices of a prompt agree, with a seed they are sampled apart yet reproducible; usage
// counts each prompt once; streamed, each choice's chunks carry its index and add up to its text.
TEST_F(ServerScoring, SeveralChoices) {
  json req = {{"prompt", {"The jury said", "It was"}}, {"n", 2}, {"max_tokens", 6}, {"temperature", 0}};
  auto r = post(*srv, "/v1/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = r.json();
  ASSERT_EQ(body["choices"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(body["choices"][i]["index"], i);
  EXPECT_EQ(body["choices"][0]["text"], body["choices"][1]["text"]);
  EXPECT_NE(body["choices"][0]["text"], body["choices"][2]["text"]);
  auto single = post(*srv, "/v1/completions", json{{"prompt", "It was"}, {"max_tokens", 6}, {"temperature", 0}});
  EXPECT_EQ(body["choices"][2]["text"], single.json()["choices"][0]["text"]);
  const int p0 = post(*srv, "/v1/completions", json{{"prompt", "The jury said"}, {"max_tokens", 1}}).json()["usage"]["prompt_tokens"];
  EXPECT_EQ(body["usage"]["prompt_tokens"], p0 + single.json()["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(body["usage"]["completion_tokens"], 24);

  req["stream"] = true;
  const stream_result sr = parse_stream(post(*srv, "/v1/completions", req).body, false);
  EXPECT_TRUE(sr.done && sr.well_formed);
  std::map<int, std::string> texts;
  std::map<int, int> finishes;
  for (const json& c : sr.chunks)
    for (const json& ch : c["choices"]) {
      texts[ch["index"].get<int>()] += ch["text"].get<std::string>();
      finishes[ch["index"].get<int>()] += !ch["finish_reason"].is_null();
    }
  ASSERT_EQ(texts.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(texts[i], body["choices"][size_t(i)]["text"]) << i;
    EXPECT_EQ(finishes[i], 1) << i;
  }

  json sampled = {{"messages", {{{"role", "user"}, {"content", "Tell me"}}}}, {"n", 3}, {"max_tokens", 12}, {"temperature", 1.5}, {"seed", 5}};
  auto a = post(*srv, "/v1/chat/completions", sampled), b = post(*srv, "/v1/chat/completions", sampled);
  ASSERT_EQ(a.status, 200) << a.body;
  const json ca = a.json()["choices"], cb = b.json()["choices"];
  ASSERT_EQ(ca.size(), 3u);
  EXPECT_EQ(ca, cb);  // the same seed, the same three
  EXPECT_FALSE(ca[0]["message"]["content"] == ca[1]["message"]["content"] && ca[1]["message"]["content"] == ca[2]["message"]["content"]);
  sampled["stream"] = true;
  const stream_result cs = parse_stream(post(*srv, "/v1/chat/completions", sampled).body, true);
  std::map<int, std::string> chat_texts;
  std::map<int, int> roles;
  for (const json& c : cs.chunks)
    for (const json& ch : c["choices"]) {
      if (ch["delta"].contains("content")) chat_texts[ch["index"].get<int>()] += ch["delta"]["content"].get<std::string>();
      roles[ch["index"].get<int>()] += ch["delta"].contains("role");
    }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(chat_texts[i], ca[size_t(i)]["message"]["content"]) << i;
    EXPECT_EQ(roles[i], 1) << i;
  }

  // lm-evaluation-harness's batched scoring: token id lists, echo, logprobs, one choice each.
  json batch = {{"prompt", {{1, 337, 501}, {1, 332, 959, 554}}}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0}};
  auto scored = post(*srv, "/v1/completions", batch);
  ASSERT_EQ(scored.status, 200) << scored.body;
  EXPECT_EQ(scored.json()["choices"][0]["logprobs"]["tokens"].size(), 3u);
  EXPECT_EQ(scored.json()["choices"][1]["logprobs"]["tokens"].size(), 4u);
  EXPECT_EQ(scored.json()["usage"]["prompt_tokens"], 7);
}

}  // namespace
}  // namespace glia::test
