// glia serve against a live process on the Brown model: every endpoint, the response shapes, greedy
// text against llama.cpp's golden continuation, streaming, stop strings, logprobs and the errors.
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include <chrono>
#include <ctime>

#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

// llama.cpp's greedy continuation of "The jury said" (testdata golden/brown-q8_0.json), 32 tokens.
const std::string jury_golden = " the same time he was a few moment. Then he was a few moment, he was a few moment";

class ServerEndpoints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { srv = new server_process({"-m", test_model(), "--kv-type", "f32", "--metrics"}); }
  static void TearDownTestSuite() {
    delete srv;
    srv = nullptr;
  }
  void SetUp() override { ASSERT_NE(srv->port(), 0) << srv->log(); }
  static server_process* srv;
};
server_process* ServerEndpoints::srv = nullptr;

TEST_F(ServerEndpoints, ListeningLineAndFallbackWarning) {
  const std::string log = srv->log();
  EXPECT_NE(log.find("warning: the model has no chat template; using ChatML"), std::string::npos) << log;
  size_t n = 0;
  for (size_t p = log.find("glia serve: listening on"); p != std::string::npos; p = log.find("glia serve: listening on", p + 1)) ++n;
  EXPECT_EQ(n, 1u);
}

TEST_F(ServerEndpoints, HealthModelsTokenize) {
  auto h = get(*srv, "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json()["status"], "ok");
  auto m = get(*srv, "/v1/models");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.json()["object"], "list");
  EXPECT_EQ(m.json()["data"][0]["id"], "brown-q8_0.gguf");
  // When the model was loaded (Unix seconds): after 2026-01-01, not in the future.
  const int64_t created = m.json()["data"][0]["created"].get<int64_t>();
  EXPECT_GT(created, 1767225600);
  EXPECT_LE(created, int64_t(std::time(nullptr)));
  auto t = post(*srv, "/tokenize", json{{"content", "The jury said"}, {"add_special", true}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.json()["tokens"], json::parse("[1, 337, 501, 332, 959, 554]"));
  auto d = post(*srv, "/detokenize", json{{"tokens", {337, 501, 332, 959, 554}}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.json()["content"], "The jury said");
  // Control tokens as their text, as llama-server's /detokenize and `glia detokenize` show them.
  d = post(*srv, "/detokenize", json{{"tokens", {1, 337, 501, 332, 959, 554, 2}}});
  EXPECT_EQ(d.json()["content"], "<s> The jury said</s>") << d.body;
  EXPECT_EQ(post(*srv, "/detokenize", json{{"tokens", {5000}}}).status, 400);
  auto fraction = post(*srv, "/detokenize", json{{"tokens", {1.5}}});
  EXPECT_EQ(fraction.status, 400);
  EXPECT_NE(fraction.body.find("must be integers, got 1.5"), std::string::npos) << fraction.body;
  auto nested = post(*srv, "/detokenize", json::parse(R"({"tokens": [[1, "a"]]})"));
  EXPECT_NE(nested.body.find("must be integers, got an array"), std::string::npos) << nested.body;
  EXPECT_EQ(post(*srv, "/tokenize", json{{"content", 5}}).status, 400);
  // The SDKs' models.retrieve.
  auto one = get(*srv, "/v1/models/brown-q8_0.gguf");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json()["id"], "brown-q8_0.gguf");
  EXPECT_EQ(one.json()["object"], "model");
  auto other = get(*srv, "/v1/models/gpt-4o");
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.json()["error"]["code"], "model_not_found") << other.body;
  EXPECT_EQ(other.json()["error"]["type"], "invalid_request_error") << other.body;
  EXPECT_EQ(get(*srv, "/v1/models/").status, 404);
  auto post_id = post(*srv, "/v1/models/brown-q8_0.gguf", std::string("{}"));
  EXPECT_EQ(post_id.status, 405) << post_id.body;
}

// As llama-server: special-token text is the token unless parse_special is false (so /tokenize
// counts a prompt as the completion routes do), and with_pieces gives each token's text.
TEST_F(ServerEndpoints, TokenizeReadsSpecialTokensAndGivesPieces) {
  auto special = post(*srv, "/tokenize", json{{"content", "The jury said</s>"}});
  auto plain = post(*srv, "/tokenize", json{{"content", "The jury said</s>"}, {"parse_special", false}});
  ASSERT_EQ(special.status, 200) << special.body;
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(special.json()["tokens"], json::parse("[337, 501, 332, 959, 554, 2]"));
  EXPECT_GT(plain.json()["tokens"].size(), 6u);
  auto pieces = post(*srv, "/tokenize", json{{"content", "The jury"}, {"with_pieces", true}});
  ASSERT_EQ(pieces.status, 200) << pieces.body;
  const json t = pieces.json()["tokens"];
  ASSERT_EQ(t.size(), 4u) << pieces.body;
  EXPECT_EQ(t[0]["id"], 337);
  std::string text;
  for (const auto& p : t) text += p["piece"].get<std::string>();
  EXPECT_EQ(text, " The jury");  // SentencePiece's leading space included, as llama-server shows it
  // A character the vocabulary has no piece for comes as byte tokens: each piece as its bytes.
  auto bytes = post(*srv, "/tokenize", json{{"content", "\xC3\xAF"}, {"with_pieces", true}});
  ASSERT_EQ(bytes.status, 200) << bytes.body;
  const json b = bytes.json()["tokens"];
  ASSERT_EQ(b.size(), 3u) << bytes.body;
  EXPECT_EQ(b[0]["piece"], " ") << bytes.body;  // SentencePiece's dummy prefix
  EXPECT_EQ(b[1]["piece"], json::array({0xC3})) << bytes.body;
  EXPECT_EQ(b[2]["piece"], json::array({0xAF})) << bytes.body;
}

TEST_F(ServerEndpoints, CompletionMatchesGolden) {
  auto r = post(*srv, "/v1/completions", json{{"model", "anything"}, {"prompt", "The jury said"}, {"max_tokens", 32}, {"temperature", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "anything");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["text"], jury_golden);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 6);
  EXPECT_EQ(j["usage"]["completion_tokens"], 32);
  EXPECT_EQ(j["usage"]["total_tokens"], 38);
  // Token ids as the prompt give the same text.
  auto ids = post(*srv, "/v1/completions", json{{"prompt", {1, 337, 501, 332, 959, 554}}, {"max_tokens", 32}, {"temperature", 0}});
  ASSERT_EQ(ids.status, 200) << ids.body;
  EXPECT_EQ(ids.json()["choices"][0]["text"], jury_golden);
}

TEST_F(ServerEndpoints, StreamingEqualsWholeAndEndsWithDone) {
  json req = {{"prompt", "The jury said"}, {"max_tokens", 32}, {"temperature", 0}, {"stream", true},
              {"stream_options", {{"include_usage", true}}}};
  auto r = post(*srv, "/v1/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("Content-Type")->second.find("text/event-stream"), std::string::npos);
  auto s = parse_stream(r.body, false);
  EXPECT_TRUE(s.done);
  EXPECT_TRUE(s.well_formed);
  EXPECT_EQ(s.text, jury_golden);
  EXPECT_EQ(s.finish_reason, "length");
  EXPECT_EQ(s.usage["completion_tokens"], 32);
  EXPECT_EQ(s.usage["prompt_tokens"], 6);
  ASSERT_FALSE(s.chunks.empty());
  EXPECT_TRUE(s.chunks.back()["choices"].empty());  // the usage chunk has no choices
  EXPECT_TRUE(s.chunks.front().contains("usage") && s.chunks.front()["usage"].is_null());
}

TEST_F(ServerEndpoints, StopStringsNeverReturned) {
  // "few moment" spans several tokens; the text stops right before its first occurrence.
  const std::string stop = "few mo";
  const std::string expect = jury_golden.substr(0, jury_golden.find(stop));
  for (bool stream : {false, true}) {
    json req = {{"prompt", "The jury said"}, {"max_tokens", 32}, {"temperature", 0}, {"stop", {"zzz", stop}}, {"stream", stream}};
    auto r = post(*srv, "/v1/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    if (stream) {
      auto s = parse_stream(r.body, false);
      EXPECT_EQ(s.text, expect);
      EXPECT_EQ(s.finish_reason, "stop");
      EXPECT_TRUE(s.done);
    } else {
      EXPECT_EQ(r.json()["choices"][0]["text"], expect);
      EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
    }
  }
}

TEST_F(ServerEndpoints, ChatWholeAndStreamed) {
  json req = {{"messages", {{{"role", "system"}, {"content", "Answer."}}, {{"role", "user"}, {"content", "Where is the jury?"}}}},
              {"max_tokens", 12}, {"temperature", 0}};
  auto r = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  const std::string whole = j["choices"][0]["message"]["content"];
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 10);
  req["stream"] = true;
  auto s = parse_stream(post(*srv, "/v1/chat/completions", req).body, true);
  EXPECT_TRUE(s.done);
  EXPECT_TRUE(s.well_formed);
  EXPECT_EQ(s.text, whole);
  ASSERT_FALSE(s.chunks.empty());
  EXPECT_EQ(s.chunks.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(s.chunks.front()["choices"][0]["delta"]["role"], "assistant");
}

TEST_F(ServerEndpoints, Logprobs) {
  json req = {{"messages", {{{"role", "user"}, {"content", "The jury"}}}}, {"max_tokens", 5}, {"temperature", 0},
              {"logprobs", true}, {"top_logprobs", 3}};
  auto r = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = r.json();
  const json& content = body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (const auto& e : content) {
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
  }
  auto c = post(*srv, "/v1/completions", json{{"prompt", "The jury said"}, {"max_tokens", 4}, {"temperature", 0}, {"logprobs", 2}});
  ASSERT_EQ(c.status, 200) << c.body;
  const json cbody = c.json();
  const json& lp = cbody["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"].size(), 4u);
  EXPECT_EQ(lp["token_logprobs"].size(), 4u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  // Streamed, each chunk's text_offset runs on from the chunks before it: the same offsets.
  json sreq = {{"prompt", "The jury said"}, {"max_tokens", 4}, {"temperature", 0}, {"logprobs", 2}, {"stream", true}};
  const auto s = parse_stream(post(*srv, "/v1/completions", sreq).body, false);
  json offsets = json::array();
  for (const auto& chunk : s.chunks) {
    const json& l = chunk["choices"][0]["logprobs"];
    if (l.is_object())
      for (const auto& o : l["text_offset"]) offsets.push_back(o);
  }
  EXPECT_EQ(offsets, lp["text_offset"]);
}

// A stop string's own tokens are not in the logprobs: every listed token starts inside the returned
// text (llama-server drops them too), and the text is where the tokens' text begins. Streamed, the same.
TEST_F(ServerEndpoints, LogprobsEndWithTheReturnedText) {
  for (const char* stop : {"same", "jury", "e"}) {
    json req = {{"prompt", "The jury said"}, {"max_tokens", 20}, {"temperature", 0}, {"stop", stop}, {"logprobs", 1}};
    auto r = post(*srv, "/v1/completions", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const json choice = r.json()["choices"][0];
    const std::string text = choice["text"];
    const json& lp = choice["logprobs"];
    std::string joined;
    for (const auto& t : lp["tokens"]) joined += t.get<std::string>();
    EXPECT_EQ(joined.substr(0, text.size()), text) << stop;
    for (const auto& o : lp["text_offset"]) EXPECT_LT(o.get<size_t>(), std::max<size_t>(text.size(), 1)) << stop << " " << r.body;
    if (choice["finish_reason"] == "stop" && !lp["tokens"].empty()) {
      const std::string last = lp["tokens"].back();
      EXPECT_LT(joined.size() - last.size(), text.size()) << "the last token starts inside the text: " << r.body;
    }
    req["stream"] = true;
    const auto st = parse_stream(post(*srv, "/v1/completions", req).body, false);
    json tokens = json::array();
    for (const auto& chunk : st.chunks) {
      const json& l = chunk["choices"][0]["logprobs"];
      if (l.is_object())
        for (const auto& t : l["tokens"]) tokens.push_back(t);
    }
    EXPECT_EQ(tokens, lp["tokens"]) << stop;
    EXPECT_EQ(st.text, text) << stop;
  }
}

// text_offset counts characters of the returned text, as OpenAI and vLLM do (Python string offsets),
// not bytes of the tokens: on a model whose greedy text has Cyrillic letters (two bytes each, some
// split across byte tokens), each whole-character token's text is found at its offset.
TEST(ServerLogprobs, TextOffsetsCountCharactersOfTheText) {
  server_process srv({"-m", test::testdata("models/llama-h256-Q2_K.gguf")});
  ASSERT_NE(srv.port(), 0) << srv.log();
  auto r = post(srv, "/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 14}, {"temperature", 0}, {"logprobs", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = r.json()["choices"][0];
  const std::string text = choice["text"];
  std::vector<size_t> char_start;  // byte position of each character
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) char_start.push_back(i);
  ASSERT_GT(text.size(), char_start.size()) << "the test needs multi-byte characters: " << text;
  const json& lp = choice["logprobs"];
  size_t prev = 0, checked = 0;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    const size_t off = lp["text_offset"][i];
    EXPECT_GE(off, prev);
    ASSERT_LE(off, char_start.size()) << r.body;
    prev = off;
    const std::string tok = lp["tokens"][i];
    if (tok.find("\xEF\xBF\xBD") != std::string::npos || off == char_start.size()) continue;  // a byte token
    EXPECT_EQ(text.compare(char_start[off], tok.size(), tok), 0) << "token " << i << " '" << tok << "' at " << off << ": " << r.body;
    ++checked;
  }
  EXPECT_GT(checked, 5u);
}

// Legacy completions list the sampled token among the alternatives even when it is not one of the
// most likely (OpenAI: up to logprobs + 1 entries). The bias forces token 198, which the model's own
// distribution (what logprobs report) does not rank first.
TEST_F(ServerEndpoints, LegacyTopLogprobsIncludeTheSampledToken) {
  auto c = post(*srv, "/v1/completions", json{{"prompt", "The jury said"}, {"max_tokens", 3}, {"temperature", 0},
                                              {"logprobs", 1}, {"logit_bias", {{"198", 100}}}});
  ASSERT_EQ(c.status, 200) << c.body;
  const json lp = c.json()["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const json& top = lp["top_logprobs"][i];
    const std::string tok = lp["tokens"][i];
    ASSERT_TRUE(top.contains(tok)) << top.dump();
    EXPECT_EQ(top[tok], lp["token_logprobs"][i]);
    EXPECT_EQ(top.size(), 2u) << top.dump();
  }
}

// ignore_eos (llama-server's and vLLM's field): end-of-generation tokens are never sampled, so a
// reply that the bias would end at once runs to max_tokens.
TEST_F(ServerEndpoints, IgnoreEosRunsToMaxTokens) {
  const json body{{"prompt", "The jury said"}, {"max_tokens", 6}, {"temperature", 0}, {"logit_bias", {{"2", 100}}}};
  auto ends = post(*srv, "/v1/completions", body);
  ASSERT_EQ(ends.status, 200) << ends.body;
  EXPECT_EQ(ends.json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(ends.json()["usage"]["completion_tokens"], 0);
  json ignoring = body;
  ignoring["ignore_eos"] = true;
  auto runs = post(*srv, "/v1/completions", ignoring);
  ASSERT_EQ(runs.status, 200) << runs.body;
  EXPECT_EQ(runs.json()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(runs.json()["usage"]["completion_tokens"], 6);
}

// A constraint no token can go on with (é is spelled from byte 0xC3 on, which the bias bans: false,
// as llama-server reads it) is an error that says so, not a short answer that passes for a whole
// one; whole and streamed. A bias of -100 only makes the token unlikely: the constraint still has it.
TEST_F(ServerEndpoints, AConstraintThatCannotGoOnIsAnError) {
  json body{{"prompt", "The jury said"}, {"max_tokens", 6}, {"temperature", 0}, {"grammar", "root ::= \"\u00e9\""},
            {"logit_bias", {{"198", false}}}};
  auto r = post(*srv, "/v1/completions", body);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("no token can continue"), std::string::npos) << r.body;
  body["stream"] = true;
  auto s = post(*srv, "/v1/completions", body);
  EXPECT_NE(s.body.find("no token can continue"), std::string::npos) << s.body;
  body["logit_bias"] = {{"198", -100}};
  body["stream"] = false;
  auto fine = post(*srv, "/v1/completions", body);
  ASSERT_EQ(fine.status, 200) << fine.body;
  EXPECT_EQ(fine.json()["choices"][0]["text"], "\u00e9");
  body["logit_bias"] = {{"198", true}};
  EXPECT_EQ(post(*srv, "/v1/completions", body).status, 400);
}

// Constrained output in each spelling clients use: the text is valid JSON under the schema, one of
// the choices, or a match of the regex; what cannot compile is a 400 naming the field.
TEST_F(ServerEndpoints, ConstrainedOutput) {
  const nlohmann::ordered_json schema{
      {"type", "object"},
      {"properties", {{"verdict", {{"enum", {"guilty", "innocent"}}}}, {"count", {{"type", "integer"}, {"minimum", 1}, {"maximum", 12}}}}},
      {"required", {"verdict", "count"}}};
  auto check_object = [&](const nlohmann::ordered_json& body) {
    auto r = post(*srv, "/v1/chat/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop") << r.body;
    const std::string content = r.json()["choices"][0]["message"]["content"];
    // In the schema's order (the body is re-read for it: its parse sorts members).
    EXPECT_LT(content.find("\"verdict\""), content.find("\"count\"")) << content;
    const json j = json::parse(content, nullptr, false);
    ASSERT_TRUE(j.is_object()) << content;
    EXPECT_TRUE(j["verdict"] == "guilty" || j["verdict"] == "innocent") << content;
    ASSERT_TRUE(j["count"].is_number_integer()) << content;
    EXPECT_GE(j["count"].get<int>(), 1);
    EXPECT_LE(j["count"].get<int>(), 12);
  };
  const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", "What did the jury say?"}}};
  check_object({{"messages", messages}, {"max_tokens", 80}, {"temperature", 0},
                {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "verdict"}, {"schema", schema}}}}}});
  check_object({{"messages", messages}, {"max_tokens", 80}, {"temperature", 1.0}, {"seed", 3}, {"json_schema", schema}});
  check_object({{"messages", messages}, {"max_tokens", 80}, {"temperature", 1.0}, {"seed", 4}, {"guided_json", schema.dump()}});
  // json_object: any object.
  auto any = post(*srv, "/v1/chat/completions", json{{"messages", messages}, {"max_tokens", 120}, {"temperature", 0.7}, {"seed", 1},
                                                     {"response_format", {{"type", "json_object"}}}});
  ASSERT_EQ(any.status, 200) << any.body;
  if (any.json()["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(any.json()["choices"][0]["message"]["content"].get<std::string>(), nullptr, false).is_object()) << any.body;
  }
  auto choice = post(*srv, "/v1/completions", json{{"prompt", "The jury said"}, {"max_tokens", 10}, {"temperature", 0.9}, {"seed", 2},
                                                   {"guided_choice", {"yes", "no", "maybe not"}}});
  ASSERT_EQ(choice.status, 200) << choice.body;
  const std::string picked = choice.json()["choices"][0]["text"];
  EXPECT_TRUE(picked == "yes" || picked == "no" || picked == "maybe not") << picked;
  auto gbnf = post(*srv, "/v1/completions", json{{"prompt", "The jury said"}, {"max_tokens", 40}, {"temperature", 0},
                                                 {"grammar", "root ::= \" the \" [a-z]{1,10} (\" \" [a-z]{1,10}){0,3} \".\""}});
  ASSERT_EQ(gbnf.status, 200) << gbnf.body;
  EXPECT_TRUE(std::regex_match(gbnf.json()["choices"][0]["text"].get<std::string>(), std::regex(" the [a-z]{1,10}( [a-z]{1,10}){0,3}\\.")))
      << gbnf.body;
  // Streaming gives the same text.
  json streamed_body{{"prompt", "The jury said"}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true},
                     {"grammar", "root ::= \" the \" [a-z]{1,10} (\" \" [a-z]{1,10}){0,3} \".\""}};
  auto streamed = post(*srv, "/v1/completions", streamed_body);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(parse_stream(streamed.body, false).text, gbnf.json()["choices"][0]["text"].get<std::string>());

  auto refused = [&](const json& extra, const std::string& field, const std::string& needle) {
    json body{{"prompt", "x"}, {"max_tokens", 4}};
    body.update(extra);
    auto r = post(*srv, "/v1/completions", body);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["param"], field) << r.body;
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
  };
  refused({{"grammar", "root ::= item"}}, "grammar", "rule 'item' is used (line 1) but never defined");
  refused({{"grammar", 5}}, "grammar", "must be a string");
  refused({{"json_schema", {{"type", "number"}, {"multipleOf", 3}}}}, "json_schema", "multipleOf");
  refused({{"guided_json", "{not json"}}, "guided_json", "not valid JSON");
  refused({{"response_format", {{"type", "xml"}}}}, "response_format", "\"xml\"");
  refused({{"response_format", {{"type", "json_schema"}}}}, "response_format", "json_schema");
  refused({{"grammar", "root ::= \"a\""}, {"json_schema", json::object()}}, "json_schema", "give one of 'grammar' and 'json_schema'");
  refused({{"guided_choice", json::array()}}, "guided_choice", "non-empty array");
  refused({{"guided_regex", "(a"}}, "guided_regex", "");
}

// A POST with neither Content-Length nor Transfer-Encoding has an empty body: answered at once (411,
// or 405 where the path takes GET), not after the HTTP library's 30-second read timeout.
TEST_F(ServerEndpoints, BodylessPostIsAnsweredAtOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string a = read_raw_reply(send_raw(*srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n"), 10000);
  EXPECT_EQ(a.rfind("HTTP/1.1 411", 0), 0u) << a;
  EXPECT_NE(a.find("must have a Content-Length"), std::string::npos) << a;
  const std::string unknown = read_raw_reply(send_raw(*srv, "POST /nope HTTP/1.1\r\nHost: x\r\n\r\n"), 10000);
  EXPECT_EQ(unknown.rfind("HTTP/1.1 404", 0), 0u) << unknown;
  const std::string b = read_raw_reply(send_raw(*srv, "POST /health HTTP/1.1\r\nHost: x\r\n\r\n"), 10000);
  EXPECT_EQ(b.rfind("HTTP/1.1 405", 0), 0u) << b;
  EXPECT_NE(b.find("Allow: GET"), std::string::npos) << b;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(get(*srv, "/health").status, 200);
}

// "Expect: 100-continue": a body that would be refused is refused before the client uploads it;
// one that will be read gets the go.
TEST_F(ServerEndpoints, ExpectContinueRefusesBeforeTheBody) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n";
  const std::string big = read_raw_reply(send_raw(*srv, head + "Content-Length: 999999999\r\n\r\n"), 10000);
  EXPECT_EQ(big.rfind("HTTP/1.1 413", 0), 0u) << big;
  const int fd = send_raw(*srv, head + "Content-Length: 44\r\n\r\n");
  ASSERT_GE(fd, 0);
  char buf[256];
  const ssize_t n = recv(fd, buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, size_t(n)), "HTTP/1.1 100 Continue\r\n\r\n");
  const std::string body = R"({"prompt": "The jury said", "max_tokens": 1})";
  ASSERT_EQ(send(fd, body.data(), body.size(), MSG_NOSIGNAL), ssize_t(body.size()));
  const std::string answer = read_raw_reply(fd, 10000);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
}

// An HTTP/1.0 client knows no chunked encoding (ApacheBench, nginx's default proxy_http_version): its
// stream comes as plain bytes, ended by the end of the connection.
TEST_F(ServerEndpoints, StreamsToHttp10ClientsAreNotChunked) {
  const std::string body = R"({"prompt": "The jury said", "max_tokens": 3, "stream": true})";
  const std::string reply = read_raw_reply(
      send_raw(*srv, "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\n\r\n" + body),
      10000);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_EQ(reply.find("Transfer-Encoding"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
  const std::string events = reply.substr(reply.find("\r\n\r\n") + 4);
  EXPECT_TRUE(events.starts_with("data: {")) << reply;
  EXPECT_TRUE(events.ends_with("data: [DONE]\n\n")) << reply;
  EXPECT_TRUE(parse_stream(events, false).done) << reply;
  // One that asks for Keep-Alive still sees its stream end at once (the library would keep it open).
  const auto t0 = std::chrono::steady_clock::now();
  const std::string kept = read_raw_reply(
      send_raw(*srv, "POST /v1/completions HTTP/1.0\r\nConnection: Keep-Alive\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body),
      10000);
  EXPECT_TRUE(kept.ends_with("data: [DONE]\n\n")) << kept;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

// Bodies refused before any byte of them is read: a Content-Length that is not a number (the HTTP
// library would read it as 0 and take the body for the next request), a multipart or compressed body; and one
// that ends before its Content-Length is an error, not a request.
TEST_F(ServerEndpoints, MalformedBodiesAreRefused) {
  const std::string body = R"({"prompt": "The jury said", "max_tokens": 1})";
  const std::string garbage = read_raw_reply(
      send_raw(*srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n" + body), 10000);
  EXPECT_EQ(garbage.rfind("HTTP/1.1 400", 0), 0u) << garbage;
  EXPECT_NE(garbage.find("not a number of bytes"), std::string::npos) << garbage;
  // Two lengths that differ, in either order: a proxy that took the other would split requests elsewhere.
  for (const char* lengths : {"Content-Length: 44\r\nContent-Length: 5\r\n", "Content-Length: 5\r\nContent-Length: 44\r\n"}) {
    const std::string two = read_raw_reply(send_raw(*srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + std::string(lengths) + "\r\n" + body), 10000);
    EXPECT_EQ(two.rfind("HTTP/1.1 400", 0), 0u) << two;
    EXPECT_NE(two.find("two different Content-Length"), std::string::npos) << two;
  }
  ASSERT_EQ(body.size(), 44u);
  // What follows a refused request's headers is never read as a request of its own (behind a proxy
  // that framed the body otherwise, it would be a smuggled one).
  const int smuggler = send_raw(*srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\n"
                                      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_GE(smuggler, 0);
  std::string all;
  char chunk[4096];
  timeval tv{5, 0};
  setsockopt(smuggler, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (ssize_t n; (n = recv(smuggler, chunk, sizeof chunk, 0)) > 0;) all.append(chunk, size_t(n));
  close(smuggler);
  EXPECT_EQ(all.rfind("HTTP/1.1 400", 0), 0u) << all;
  EXPECT_EQ(all.find("HTTP/1.1", 1), std::string::npos) << all;
  const std::string same = read_raw_reply(
      send_raw(*srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 44\r\nContent-Length: 44\r\nConnection: close\r\n\r\n" + body), 10000);
  EXPECT_EQ(same.rfind("HTTP/1.1 200", 0), 0u) << same;
  auto c = srv->client();
  auto multi = c.Post("/v1/completions", "--x\r\n\r\n" + body + "\r\n--x--\r\n", "multipart/form-data; boundary=x");
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->status, 415) << multi->body;
  // A compressed body (which the library would inflate without bound: a gzip bomb) is refused unread.
  const std::string gz = read_raw_reply(send_raw(*srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
                                                       "Content-Type: application/json\r\nContent-Length: 4\r\n\r\nabcd"), 10000);
  EXPECT_EQ(gz.rfind("HTTP/1.1 415", 0), 0u) << gz;
  EXPECT_NE(gz.find("Content-Encoding: gzip"), std::string::npos) << gz;
  auto plain = c.Post("/v1/completions", {{"Content-Encoding", "Identity"}}, body, "application/json");  // codings ignore case
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200) << plain->body;
  // A whole request's JSON under a Content-Length 3 bytes longer, then the client stops sending
  // (half-close): no generation may start from it (the prompt-token count stays).
  const auto prompt_tokens = [&] {
    const std::string m = get(*srv, "/metrics").body;
    const size_t at = m.find("\nglia_prompt_tokens_total ");
    return at == std::string::npos ? std::string("missing") : m.substr(at, m.find('\n', at + 1) - at);
  };
  const std::string before = prompt_tokens();
  const int fd = send_raw(*srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(body.size() + 3) + "\r\n\r\n" + body);
  ASSERT_GE(fd, 0);
  shutdown(fd, SHUT_WR);
  const std::string cut = read_raw_reply(fd, 10000);
  EXPECT_EQ(cut.find("\"choices\""), std::string::npos) << cut;
  EXPECT_NE(before, "missing");
  EXPECT_EQ(prompt_tokens(), before);
  EXPECT_EQ(get(*srv, "/health").status, 200);
}

// curl -d sends application/x-www-form-urlencoded, which the HTTP library would cap at 8 KiB: a
// larger JSON body under that type is read like any other.
TEST_F(ServerEndpoints, FormEncodedJsonBodyOverEightKiB) {
  const std::string body = R"({"prompt": "The jury said",)" + std::string(12000, ' ') + R"("max_tokens": 1})";
  auto c = srv->client();
  auto r = c.Post("/v1/completions", body, "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(ServerEndpoints, SeededSamplingRepeats) {
  json req = {{"prompt", "She opened the door and"}, {"max_tokens", 16}, {"temperature", 1.0}, {"top_k", 40}, {"seed", 42},
              {"presence_penalty", 0.5}, {"frequency_penalty", 0.2}, {"logit_bias", {{"263", -100}}}};
  auto a = post(*srv, "/v1/completions", req);
  auto b = post(*srv, "/v1/completions", req);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.json()["choices"][0]["text"], b.json()["choices"][0]["text"]);
}

TEST_F(ServerEndpoints, ErrorsHaveOpenAIShape) {
  auto check = [](const http_reply& r, int status, const std::string& needle) {
    EXPECT_EQ(r.status, status) << r.body;
    json j = r.json();
    ASSERT_TRUE(j.is_object()) << r.body;
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
    // OpenAI's code is a string or null (clients compare strings), never the HTTP status.
    EXPECT_TRUE(j["error"]["code"].is_null() || j["error"]["code"].is_string()) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(needle), std::string::npos) << r.body;
  };
  check(post(*srv, "/v1/chat/completions", std::string("{not json")), 400, "not valid JSON");
  check(post(*srv, "/v1/chat/completions", std::string("{\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]}")), 400, "UTF-8");
  check(post(*srv, "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"n", 500}}), 400, "'n'");
  check(post(*srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", "many"}}), 400, "max_tokens");
  check(post(*srv, "/v1/completions", json{{"prompt", "x"}, {"logit_bias", {{"99999", 1}}}}), 400, "logit_bias");
  check(post(*srv, "/v1/completions", json{{"prompt", {1, 99999}}}), 400, "vocabulary");
  // The model's context is 256 tokens: a longer prompt names both numbers.
  std::string long_prompt;
  for (int i = 0; i < 300; ++i) long_prompt += " the";
  auto r = post(*srv, "/v1/completions", json{{"prompt", long_prompt}});
  check(r, 400, "tokens, but the context holds 256");
  EXPECT_NE(r.body.find("the prompt has 30"), std::string::npos) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "context_length_exceeded");
  check(get(*srv, "/v1/nothing"), 404, "no such endpoint");
  // A known endpoint with the wrong method: 405 and the method it takes.
  auto wrong = get(*srv, "/v1/chat/completions");
  check(wrong, 405, "takes POST");
  ASSERT_EQ(wrong.headers.count("Allow"), 1u);
  EXPECT_EQ(wrong.headers.find("Allow")->second, "POST");
  check(post(*srv, "/v1/models", std::string("{}")), 405, "takes GET");
}

// A prompt the slot's KV cache already holds is not evaluated again (only its last token, whose
// logits are needed).
TEST_F(ServerEndpoints, PrefixReuse) {
  auto prompt_tokens = [] {
    const std::string m = get(*srv, "/metrics").body;
    const std::string key = "\nglia_prompt_tokens_total ";
    const size_t at = m.find(key);
    return at == std::string::npos ? -1L : std::stol(m.substr(at + key.size()));
  };
  const json req = {{"prompt", "It was a cold morning in the city, and the old man"}, {"max_tokens", 3}, {"temperature", 0}};
  auto first = post(*srv, "/v1/completions", req);
  ASSERT_EQ(first.status, 200) << first.body;
  const long before = prompt_tokens();
  auto again = post(*srv, "/v1/completions", req);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(prompt_tokens(), before + 1);
  EXPECT_EQ(again.json()["choices"][0]["text"], first.json()["choices"][0]["text"]);
}

TEST_F(ServerEndpoints, MetricsText) {
  auto m = get(*srv, "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.headers.find("Content-Type")->second.find("text/plain"), std::string::npos);
  for (const char* name : {"glia_requests_total", "glia_generated_tokens_total", "glia_prefill_tokens_per_second",
                           "glia_decode_tokens_per_second", "glia_queue_length", "glia_slots_busy", "glia_kv_cache_tokens"})
    EXPECT_NE(m.body.find(name), std::string::npos) << name;
}

// A model with a real chat template (given by --chat-template, since no test model carries one).
TEST(ServerTemplate, RealChatTemplate) {
  server_process srv({"-m", test_model(), "--chat-template", llama2_chat_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  EXPECT_EQ(srv.log().find("using ChatML"), std::string::npos);
  json req = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 4}, {"temperature", 0}};
  auto r = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  // Llama-2 chat renders "<s>[INST] Hello [/INST]": more tokens than the bare message.
  EXPECT_GT(r.json()["usage"]["prompt_tokens"].get<int>(), 6);
}

// chat_template_kwargs reach the template as variables (Qwen3's enable_thinking switch).
TEST(ServerTemplate, ChatTemplateKwargsAreTemplateVariables) {
  const std::string tmpl = test::scratch("kwargs_template.jinja");
  {
    std::ofstream out(tmpl);
    out << "{% if enable_thinking is defined and not enable_thinking %}no thinking here please {% endif %}"
           "{% if reasoning_effort is defined %}effort {{ reasoning_effort }} effort {{ reasoning_effort }} {% endif %}"
           "{{ messages[0].content }}{% if add_generation_prompt %} and now the answer{% endif %}";
  }
  server_process srv({"-m", test_model(), "--chat-template", tmpl});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 1}, {"temperature", 0}};
  auto plain = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(plain.status, 200) << plain.body;
  req["chat_template_kwargs"] = {{"enable_thinking", false}};
  auto switched = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(switched.status, 200) << switched.body;
  EXPECT_GT(switched.json()["usage"]["prompt_tokens"].get<int>(), plain.json()["usage"]["prompt_tokens"].get<int>() + 3);
  // The same variables for every request from the command line; a request's own win.
  {
    server_process with_flag({"-m", test_model(), "--chat-template", tmpl, "--chat-template-kwargs", R"({"enable_thinking": false})"});
    ASSERT_NE(with_flag.port(), 0) << with_flag.log();
    json bare = req;
    bare.erase("chat_template_kwargs");
    auto r = post(with_flag, "/v1/chat/completions", bare);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["usage"]["prompt_tokens"], switched.json()["usage"]["prompt_tokens"]);
    bare["chat_template_kwargs"] = {{"enable_thinking", true}};
    r = post(with_flag, "/v1/chat/completions", bare);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["usage"]["prompt_tokens"], plain.json()["usage"]["prompt_tokens"]);
  }
  server_process bad({"-m", test_model(), "--chat-template-kwargs", "[1]"});
  EXPECT_EQ(bad.port(), 0);
  EXPECT_NE(bad.log().find("--chat-template-kwargs must be a JSON object"), std::string::npos) << bad.log();
  req.erase("chat_template_kwargs");
  // OpenAI's reasoning_effort reaches the template as its variable (as vLLM passes it).
  json effort = req;
  effort["reasoning_effort"] = "high";
  auto high = post(srv, "/v1/chat/completions", effort);
  ASSERT_EQ(high.status, 200) << high.body;
  EXPECT_GT(high.json()["usage"]["prompt_tokens"].get<int>(), plain.json()["usage"]["prompt_tokens"].get<int>() + 3);
  effort["reasoning_effort"] = "extreme";
  auto refused = post(srv, "/v1/chat/completions", effort);
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.json()["error"]["param"], "reasoning_effort");
  req["add_generation_prompt"] = false;
  auto no_prompt = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(no_prompt.status, 200) << no_prompt.body;
  EXPECT_LT(no_prompt.json()["usage"]["prompt_tokens"].get<int>(), plain.json()["usage"]["prompt_tokens"].get<int>());
}

// continue_final_message: the prompt ends with the assistant's partial reply (Llama 2's template
// would close it with " </s>"), so the reply continues it.
TEST(ServerTemplate, ContinueFinalMessageEndsThePromptWithIt) {
  server_process srv({"-m", test_model(), "--chat-template", llama2_chat_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = {{"messages", {{{"role", "user"}, {"content", "Hello"}}, {{"role", "assistant"}, {"content", "The jury said"}}}},
              {"max_tokens", 1}, {"temperature", 0}};
  auto closed = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(closed.status, 200) << closed.body;
  req["continue_final_message"] = true;
  auto open = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(open.status, 200) << open.body;
  EXPECT_LT(open.json()["usage"]["prompt_tokens"].get<int>(), closed.json()["usage"]["prompt_tokens"].get<int>());
}

TEST(ServerAuthKey, BearerRequiredExceptHealth) {
  server_process srv({"-m", test_model(), "--api-key", "sekrit"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  EXPECT_EQ(get(srv, "/health").status, 200);
  EXPECT_EQ(get(srv, "/v1/models").status, 401);
  EXPECT_EQ(get(srv, "/v1/models", "wrong").status, 401);
  EXPECT_EQ(get(srv, "/v1/models", "sekrit").status, 200);
  auto r = post(srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 1}}.dump(), "sekri");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.json()["error"]["type"], "authentication_error");
  EXPECT_EQ(r.json()["error"]["code"], "invalid_api_key");
}

// CORS: by default any origin may call (as llama-server and vLLM allow); preflights are answered
// without the API key; --cors-origin restricts the origins, none turns CORS off.
TEST_F(ServerEndpoints, CorsAnyOriginByDefault) {
  auto c = srv->client();
  auto pre = c.Options("/v1/chat/completions", {{"Origin", "http://ui.example"},
                                                 {"Access-Control-Request-Method", "POST"},
                                                 {"Access-Control-Request-Headers", "authorization, content-type"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 200);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "*");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type");
  const std::string body = json{{"prompt", "The jury said"}, {"max_tokens", 1}}.dump();
  auto r = c.Post("/v1/completions", {{"Origin", "http://ui.example"}}, body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "*");
  auto plain = c.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->has_header("Access-Control-Allow-Origin"));
}

TEST(ServerCors, ListedOriginsOnlyAndPreflightsNeedNoKey) {
  server_process srv({"-m", test_model(), "--api-key", "sekrit", "--cors-origin", "http://a.example"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  auto c = srv.client();
  const httplib::Headers ask = {{"Access-Control-Request-Method", "POST"}};
  httplib::Headers from_a = ask, from_b = ask;
  from_a.emplace("Origin", "http://a.example");
  from_b.emplace("Origin", "http://b.example");
  auto a = c.Options("/v1/completions", from_a);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->get_header_value("Access-Control-Allow-Origin"), "http://a.example");
  EXPECT_EQ(a->get_header_value("Vary"), "Origin");
  // Endpoints with an id in the path too, whatever the id (a browser must be able to see the 404).
  for (const char* path : {"/v1/models/brown-q8_0.gguf", "/v1/models/gpt-4o"}) {
    auto id = c.Options(path, from_a);
    ASSERT_TRUE(id);
    EXPECT_EQ(id->status, 200) << path;
  }
  auto b = c.Options("/v1/completions", from_b);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 401);  // not a preflight we answer: it needs the key like any request
  EXPECT_FALSE(b->has_header("Access-Control-Allow-Origin"));
  EXPECT_EQ(b->get_header_value("Vary"), "Origin");
  // An allowed origin does not stand in for the key.
  auto no_key = c.Get("/v1/models", {{"Origin", "http://a.example"}});
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 401);
  auto m = c.Get("/v1/models", {{"Origin", "http://a.example"}, {"Authorization", "Bearer sekrit"}});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Access-Control-Allow-Origin"), "http://a.example");
}

TEST(ServerCors, NoneTurnsItOff) {
  server_process srv({"-m", test_model(), "--cors-origin", "none"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  auto c = srv.client();
  auto pre = c.Options("/v1/completions", {{"Origin", "http://ui.example"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 405);
  EXPECT_FALSE(pre->has_header("Access-Control-Allow-Origin"));
}

TEST(ServerLimits, BodyCap) {
  server_process srv({"-m", test_model(), "--max-body", "4096"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  auto r = post(srv, "/v1/completions", json{{"prompt", std::string(10000, 'a')}}.dump());
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(get(srv, "/health").status, 200);  // still serving
}

}  // namespace
}  // namespace glia::test
