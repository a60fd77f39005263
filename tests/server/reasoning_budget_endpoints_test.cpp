// A reasoning budget through a live glia serve (the Brown model with <think> and </think> as control
// tokens, and a template that opens the reasoning): once a reply has thought for the budget, the
// close tag is forced and the model answers; usage reports the reasoning's tokens. Per request
// (llama-server's thinking_budget_tokens, vLLM's thinking_token_budget, Anthropic's
// thinking.budget_tokens) or for the server (--reasoning-budget, --reasoning-budget-message).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "http_helpers.h"
#include "test_support.h"
#include "think_fixtures.h"

namespace glia::test {
namespace {

using nlohmann::json;

json chat_request(int max_tokens) {
  return {{"messages", {{{"role", "user"}, {"content", "The jury said"}}}}, {"max_tokens", max_tokens}, {"temperature", 0}, {"logprobs", true}};
}

// The generated tokens' texts (control tokens included).
std::vector<std::string> tokens_of(const json& answer) {
  std::vector<std::string> out;
  for (const json& t : answer["choices"][0]["logprobs"]["content"]) out.push_back(t["token"].get<std::string>());
  return out;
}

std::string blank_trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string joined(const std::vector<std::string>& t, size_t from, size_t to) {
  std::string s;
  for (size_t i = from; i < to && i < t.size(); ++i) s += t[i];
  return s;
}

int reasoning_tokens(const json& answer) { return answer["usage"]["completion_tokens_details"]["reasoning_tokens"].get<int>(); }

TEST(ServerReasoningBudget, TheCloseIsForcedOnceTheBudgetIsSpent) {
  server_process srv({"-m", brown_with_think_tokens(), "--chat-template", opening_think_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const json req = chat_request(16);
  auto free = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(free.status, 200) << free.body;
  const std::vector<std::string> thought = tokens_of(free.json());
  ASSERT_EQ(thought.size(), 16u) << free.body;
  for (const std::string& t : thought) ASSERT_NE(t, "</think>") << "the model closed it alone: " << free.body;
  EXPECT_EQ(reasoning_tokens(free.json()), 16);  // cut before the close: all of it

  for (const char* field : {"thinking_budget_tokens", "thinking_token_budget"}) {
    json budgeted = req;
    budgeted[field] = 4;
    auto r = post(srv, "/v1/chat/completions", budgeted);
    ASSERT_EQ(r.status, 200) << r.body;
    const json a = r.json();
    const std::vector<std::string> got = tokens_of(a);
    ASSERT_EQ(got.size(), 16u) << r.body;
    EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + 4), std::vector<std::string>(thought.begin(), thought.begin() + 4)) << field;
    EXPECT_EQ(got[4], "</think>") << r.body;
    const json& msg = a["choices"][0]["message"];
    EXPECT_EQ(msg["reasoning_content"], blank_trimmed(joined(got, 0, 4))) << r.body;
    const std::string answer = joined(got, 5, got.size());
    EXPECT_EQ(msg["content"], answer.substr(answer.find_first_not_of(" \n"))) << r.body;
    EXPECT_FALSE(msg["content"].get<std::string>().empty()) << r.body;
    EXPECT_EQ(reasoning_tokens(a), 5) << r.body;
    EXPECT_EQ(a["usage"]["completion_tokens"], 16);

    // Streamed alike, with the same usage.
    budgeted["stream"] = true;
    budgeted["stream_options"] = {{"include_usage", true}};
    const stream_result s = parse_stream(post(srv, "/v1/chat/completions", budgeted).body, true);
    ASSERT_TRUE(s.done && s.well_formed);
    EXPECT_EQ(s.text, msg["content"]);
    std::string streamed_reasoning;
    for (const json& c : s.chunks)
      if (!c["choices"].empty() && c["choices"][0]["delta"].contains("reasoning_content"))
        streamed_reasoning += c["choices"][0]["delta"]["reasoning_content"].get<std::string>();
    EXPECT_EQ(streamed_reasoning, msg["reasoning_content"]);
    EXPECT_EQ(s.usage["completion_tokens_details"]["reasoning_tokens"], 5) << s.usage;
  }

  // 0: the reply closes at once; -1: no limit.
  json none = req;
  none["thinking_budget_tokens"] = 0;
  auto closed = post(srv, "/v1/chat/completions", none);
  ASSERT_EQ(closed.status, 200) << closed.body;
  EXPECT_EQ(tokens_of(closed.json()).at(0), "</think>");
  EXPECT_FALSE(closed.json()["choices"][0]["message"].contains("reasoning_content")) << closed.body;
  EXPECT_EQ(reasoning_tokens(closed.json()), 1);
  none["thinking_budget_tokens"] = -1;
  EXPECT_EQ(tokens_of(post(srv, "/v1/chat/completions", none).json()), thought);

  // Refused: out of range, not an integer, two names that disagree, and on /v1/completions (no
  // template, so no tags to count between).
  for (const json& bad : {json(-2), json("4"), json(1.5)}) {
    json b = req;
    b["thinking_budget_tokens"] = bad;
    auto r = post(srv, "/v1/chat/completions", b);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body;
    EXPECT_EQ(r.json()["error"]["param"], "thinking_budget_tokens") << r.body;
  }
  json both = req;
  both["thinking_budget_tokens"] = 3;
  both["thinking_token_budget"] = 4;
  EXPECT_EQ(post(srv, "/v1/chat/completions", both).status, 400);
  both["thinking_token_budget"] = 3;
  EXPECT_EQ(post(srv, "/v1/chat/completions", both).status, 200);
  EXPECT_EQ(post(srv, "/v1/completions", json{{"prompt", "The jury"}, {"max_tokens", 2}, {"thinking_budget_tokens", 3}}).status, 400);
}

// The server's budget holds for every request that sets none, with its message before the close tag
// (backslash escapes read); a request's own budget wins.
TEST(ServerReasoningBudget, TheServersBudgetAndMessage) {
  server_process srv({"-m", brown_with_think_tokens(), "--chat-template", opening_think_template(), "--reasoning-budget", "3",
                      "--reasoning-budget-message", "\\nthe end"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const json req = chat_request(20);
  auto r = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<std::string> got = tokens_of(r.json());
  const auto close = std::find(got.begin(), got.end(), "</think>");
  ASSERT_NE(close, got.end()) << r.body;
  const size_t at = size_t(close - got.begin());
  EXPECT_GT(at, 3u);  // three free tokens, then the message's
  EXPECT_TRUE(joined(got, 3, at).ends_with("\nthe end")) << r.body;
  EXPECT_TRUE(r.json()["choices"][0]["message"]["reasoning_content"].get<std::string>().ends_with("the end")) << r.body;
  EXPECT_EQ(reasoning_tokens(r.json()), int(at) + 1);

  // A request's own message.
  json own = req;
  own["thinking_budget_message"] = " so";
  const std::vector<std::string> with_own = tokens_of(post(srv, "/v1/chat/completions", own).json());
  const auto own_close = std::find(with_own.begin(), with_own.end(), "</think>");
  ASSERT_NE(own_close, with_own.end());
  // (A SentencePiece vocabulary puts its word-start space before the message, as llama.cpp's does.)
  EXPECT_TRUE(joined(with_own, 3, size_t(own_close - with_own.begin())).ends_with(" so"));

  json unlimited = req;
  unlimited["thinking_budget_tokens"] = -1;
  auto free = post(srv, "/v1/chat/completions", unlimited);
  for (const std::string& t : tokens_of(free.json())) EXPECT_NE(t, "</think>") << free.body;
  EXPECT_EQ(reasoning_tokens(free.json()), 20);
}

// With reasoning_format none a constraint holds from the first token: the reply has no reasoning to
// end, so a budget forces nothing into the answer (it would break the JSON) and nothing is counted.
TEST(ServerReasoningBudget, AConstraintFromTheFirstTokenHasNoReasoningToEnd) {
  server_process srv({"-m", brown_with_think_tokens(), "--chat-template", opening_think_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = chat_request(24);
  req["reasoning_format"] = "none";
  req["response_format"] = {{"type", "json_object"}};
  req["thinking_budget_tokens"] = 2;
  auto r = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  for (const std::string& t : tokens_of(r.json())) EXPECT_NE(t, "</think>") << r.body;
  EXPECT_TRUE(r.json()["choices"][0]["message"]["content"].get<std::string>().starts_with("{")) << r.body;
  EXPECT_EQ(reasoning_tokens(r.json()), 0);
}

// A template without reasoning tags: a budget asks nothing of the reply (clients such as Claude Code
// send one to every model), and no token is counted as reasoning.
TEST(ServerReasoningBudget, AModelThatDoesNotReasonIgnoresTheBudget) {
  server_process srv({"-m", test_model(), "--chat-template", "chatml"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = chat_request(8);
  auto plain = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(plain.status, 200) << plain.body << srv.log();
  req["thinking_budget_tokens"] = 0;
  auto budgeted = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(budgeted.status, 200) << budgeted.body;
  EXPECT_EQ(budgeted.json()["choices"][0]["message"], plain.json()["choices"][0]["message"]);
  EXPECT_EQ(reasoning_tokens(budgeted.json()), 0);
}

// Anthropic's thinking.budget_tokens is the budget (disabled: 0), and the Responses API reports the
// reasoning's tokens in its usage.
TEST(ServerReasoningBudget, TheOtherApis) {
  server_process srv({"-m", brown_with_think_tokens(), "--chat-template", opening_think_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json msg = {{"model", "glia"}, {"max_tokens", 12}, {"temperature", 0}, {"messages", {{{"role", "user"}, {"content", "The jury said"}}}},
              {"thinking", {{"type", "enabled"}, {"budget_tokens", 3}}}};
  auto r = post(srv, "/v1/messages", msg);
  ASSERT_EQ(r.status, 200) << r.body;
  const json content = r.json()["content"];
  ASSERT_EQ(content.size(), 2u) << r.body;
  EXPECT_EQ(content[0]["type"], "thinking");
  EXPECT_EQ(content[1]["type"], "text");
  EXPECT_FALSE(content[1]["text"].get<std::string>().empty()) << r.body;
  EXPECT_EQ(r.json()["stop_reason"], "max_tokens");

  msg["thinking"] = {{"type", "disabled"}};
  auto off = post(srv, "/v1/messages", msg);
  ASSERT_EQ(off.status, 200) << off.body;
  ASSERT_EQ(off.json()["content"].size(), 1u) << off.body;
  EXPECT_EQ(off.json()["content"][0]["type"], "text");

  json resp = {{"model", "glia"}, {"input", "The jury said"}, {"max_output_tokens", 12}, {"temperature", 0}};
  auto unbudgeted = post(srv, "/v1/responses", resp);
  ASSERT_EQ(unbudgeted.status, 200) << unbudgeted.body;
  EXPECT_EQ(unbudgeted.json()["usage"]["output_tokens_details"]["reasoning_tokens"], 12) << unbudgeted.body;
}

}  // namespace
}  // namespace glia::test
