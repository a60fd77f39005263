// A reasoning model's reply through a live glia serve: with a template that opens the reasoning
// (as QwQ's and the R1 distills' do), the Brown model's text is reasoning_content, whole and streamed
// alike; reasoning_format "none" (per request, or --reasoning-format none) leaves it in content; a
// constraint holds for the answer after the reasoning.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "http_helpers.h"
#include "think_fixtures.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

std::string streamed_reasoning(const stream_result& sr) {
  std::string out;
  for (const json& c : sr.chunks)
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("reasoning_content"))
      out += c["choices"][0]["delta"]["reasoning_content"].get<std::string>();
  return out;
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

TEST(ServerReasoning, OpenedReasoningIsReasoningContent) {
  server_process srv({"-m", test_model(), "--chat-template", opening_think_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = {{"messages", {{{"role", "user"}, {"content", "The jury said"}}}}, {"max_tokens", 10}, {"temperature", 0}};
  auto r = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json msg = r.json()["choices"][0]["message"];
  // Cut by max_tokens before </think>: all of it is reasoning.
  EXPECT_EQ(msg["content"], "") << r.body;
  ASSERT_TRUE(msg["reasoning_content"].is_string()) << r.body;
  const std::string reasoning = msg["reasoning_content"].get<std::string>();
  EXPECT_FALSE(reasoning.empty());
  EXPECT_EQ(reasoning, trimmed(reasoning));

  json sreq = req;
  sreq["stream"] = true;
  auto s = post(srv, "/v1/chat/completions", sreq);
  const stream_result sr = parse_stream(s.body, true);
  EXPECT_TRUE(sr.done && sr.well_formed) << s.body;
  EXPECT_EQ(sr.text, "");
  EXPECT_EQ(sr.chunks.at(0)["choices"][0]["delta"]["role"], "assistant");  // at once, before any reasoning
  std::string streamed;
  for (const json& c : sr.chunks)
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("reasoning_content"))
      streamed += c["choices"][0]["delta"]["reasoning_content"].get<std::string>();
  EXPECT_EQ(streamed, reasoning);

  req["reasoning_format"] = "none";
  auto plain = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_FALSE(plain.json()["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_EQ(trimmed(plain.json()["choices"][0]["message"]["content"].get<std::string>()), reasoning);
  req["reasoning_format"] = "sometimes";
  EXPECT_EQ(post(srv, "/v1/chat/completions", req).status, 400);
  // With reasoning_format none, a constraint holds from the first token: the reply is what it asked for.
  req["reasoning_format"] = "none";
  req["response_format"] = {{"type", "json_object"}};
  req["max_tokens"] = 40;
  auto constrained = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(constrained.status, 200) << constrained.body;
  EXPECT_FALSE(constrained.json()["choices"][0]["message"].contains("reasoning_content")) << constrained.body;
  EXPECT_TRUE(constrained.json()["choices"][0]["message"]["content"].get<std::string>().starts_with("{")) << constrained.body;
}

// A constraint (a schema, a forced tool call) holds after the reasoning, as vLLM applies it: the
// reasoning is the model's own, token for token the unconstrained reply's, and the answer after the
// close tag is what was asked for.
TEST(ServerReasoning, AConstraintHoldsAfterTheReasoning) {
  server_process srv({"-m", brown_with_think_tokens(), "--chat-template", opening_think_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = {{"messages", {{{"role", "user"}, {"content", "The jury said"}}}}, {"max_tokens", 10}, {"temperature", 0}};
  auto free = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(free.status, 200) << free.body;
  const std::string reasoning = free.json()["choices"][0]["message"]["reasoning_content"].get<std::string>();
  ASSERT_FALSE(reasoning.empty()) << free.body;

  req["response_format"] = {{"type", "json_object"}};
  auto cut = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(cut.json()["choices"][0]["message"]["reasoning_content"], reasoning) << cut.body;
  EXPECT_EQ(cut.json()["choices"][0]["message"]["content"], "") << cut.body;
  EXPECT_EQ(cut.json()["choices"][0]["finish_reason"], "length") << cut.body;

  // The model closes its reasoning at once: the rest is the JSON asked for, whole and streamed.
  req["logit_bias"] = {{std::to_string(unthink_id), 100}};
  req["max_tokens"] = 30;
  auto answered = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(answered.status, 200) << answered.body;
  const json msg = answered.json()["choices"][0]["message"];
  EXPECT_FALSE(msg.contains("reasoning_content")) << answered.body;  // nothing between the tags
  const std::string content = msg["content"].get<std::string>();
  EXPECT_TRUE(content.starts_with("{")) << answered.body;
  EXPECT_EQ(content.find("think>"), std::string::npos) << answered.body;
  req["stream"] = true;
  const stream_result sr = parse_stream(post(srv, "/v1/chat/completions", req).body, true);
  EXPECT_TRUE(sr.done && sr.well_formed);
  EXPECT_EQ(sr.text, content);

  // A named function: the reasoning, then its arguments (cut by max_tokens before any came here).
  json call = {{"messages", req["messages"]}, {"max_tokens", 10}, {"temperature", 0}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "f"}}}}},
               {"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}}}}}}}}};
  json unforced = call;
  unforced["tool_choice"] = "none";  // the same prompt (the tools shown), nothing forced
  const json tool_reasoning = post(srv, "/v1/chat/completions", unforced).json()["choices"][0]["message"]["reasoning_content"];
  ASSERT_TRUE(tool_reasoning.is_string());
  auto thought = post(srv, "/v1/chat/completions", call);
  ASSERT_EQ(thought.status, 200) << thought.body;
  EXPECT_EQ(thought.json()["choices"][0]["message"]["reasoning_content"], tool_reasoning) << thought.body;
  EXPECT_EQ(thought.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], "") << thought.body;
  call["stream"] = true;
  const stream_result st = parse_stream(post(srv, "/v1/chat/completions", call).body, true);
  EXPECT_EQ(streamed_reasoning(st), tool_reasoning.get<std::string>());
  call["logit_bias"] = req["logit_bias"];
  call["max_tokens"] = 30;
  call["stream"] = false;
  auto args = post(srv, "/v1/chat/completions", call);
  ASSERT_EQ(args.status, 200) << args.body;
  const std::string arguments = args.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>();
  EXPECT_TRUE(arguments.starts_with("{")) << args.body;
  call["stream"] = true;
  const stream_result sa = parse_stream(post(srv, "/v1/chat/completions", call).body, true);
  std::string streamed_args;
  int openings = 0;
  for (const json& c : sa.chunks)
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("tool_calls")) {
      const json& d = c["choices"][0]["delta"]["tool_calls"][0];
      openings += d.contains("id");
      streamed_args += d["function"]["arguments"].get<std::string>();
    }
  EXPECT_EQ(openings, 1);
  EXPECT_EQ(streamed_args, arguments);

  // A prefill that ends with the close tag's start: the reply's ">" (token 65) ends the reasoning,
  // and the constraint holds from there; the prefill's bytes are not returned.
  json cont = {{"messages", {{{"role", "user"}, {"content", "The jury said"}}, {{"role", "assistant"}, {"content", "<think>\nthe jury</think"}}}},
               {"continue_final_message", true}, {"max_tokens", 12}, {"temperature", 0}, {"response_format", {{"type", "json_object"}}},
               {"logit_bias", {{"65", 100}}}};
  auto closing = post(srv, "/v1/chat/completions", cont);
  ASSERT_EQ(closing.status, 200) << closing.body;
  EXPECT_FALSE(closing.json()["choices"][0]["message"].contains("reasoning_content")) << closing.body;
  EXPECT_TRUE(closing.json()["choices"][0]["message"]["content"].get<std::string>().starts_with("{")) << closing.body;
}

// A template that does not open the reasoning: the reply may open it with its first token (the one
// token allowed beside the grammar's there), and is constrained once it closes; a reply that does not
// open it is constrained from its first token.
TEST(ServerReasoning, TheReplyMayOpenTheReasoningBeforeAConstraint) {
  server_process srv({"-m", brown_with_think_tokens(), "--chat-template", plain_think_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = {{"messages", {{{"role", "user"}, {"content", "The jury said"}}}}, {"max_tokens", 20}, {"temperature", 0}, {"logprobs", true},
              {"response_format", {{"type", "json_object"}}}, {"logit_bias", {{std::to_string(think_id), 50}, {std::to_string(unthink_id), 100}}}};
  // The tokens as generated (the tags among them) and the content read from them.
  auto tokens = [](const http_reply& r) {
    std::vector<std::string> out;
    const json body = r.json();
    for (const json& t : body["choices"][0]["logprobs"]["content"]) out.push_back(t["token"].get<std::string>());
    return out;
  };
  auto opened = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(opened.status, 200) << opened.body;
  const std::string content = opened.json()["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_TRUE(content.starts_with("{")) << opened.body;
  const std::vector<std::string> generated = tokens(opened);
  ASSERT_GE(generated.size(), 3u) << opened.body;
  EXPECT_EQ(generated[0], "<think>");
  EXPECT_EQ(generated[1], "</think>");
  for (size_t i = 2; i < generated.size(); ++i) EXPECT_EQ(generated[i].find("think>"), std::string::npos) << opened.body;
  req["logit_bias"] = {{std::to_string(unthink_id), 100}};  // the close tag cannot come first
  auto plain = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_TRUE(plain.json()["choices"][0]["message"]["content"].get<std::string>().starts_with("{")) << plain.body;
  for (const std::string& t : tokens(plain)) EXPECT_EQ(t.find("think>"), std::string::npos) << plain.body;
}

// A prefill that opened the reasoning (continue_final_message): the continuation is reasoning too.
// An assistant's earlier reasoning may come back as "reasoning" (newer vLLM's name) too.
TEST(ServerReasoning, ContinuedReasoningAndItsOtherName) {
  server_process srv({"-m", test_model(), "--chat-template", opening_think_template()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = {{"messages", {{{"role", "user"}, {"content", "The jury said"}}, {{"role", "assistant"}, {"content", "<think>\nthe jury"}}}},
              {"continue_final_message", true}, {"max_tokens", 6}, {"temperature", 0}};
  auto r = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "") << r.body;
  // Every byte of the continuation, a leading space too: prefill + reasoning_content is the text.
  const std::string continued = r.json()["choices"][0]["message"]["reasoning_content"].get<std::string>();
  EXPECT_FALSE(continued.empty()) << r.body;
  req["reasoning_format"] = "none";
  auto raw = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(raw.status, 200) << raw.body;
  EXPECT_EQ(raw.json()["choices"][0]["message"]["content"].get<std::string>().substr(0, continued.size()), continued) << raw.body;
  json earlier = {{"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "assistant"}, {"content", "b"}, {"reasoning", "x"}},
                                {{"role", "user"}, {"content", "c"}}}},
                  {"max_tokens", 1}};
  EXPECT_EQ(post(srv, "/v1/chat/completions", earlier).status, 200);
  earlier["messages"][1]["reasoning"] = 5;
  EXPECT_EQ(post(srv, "/v1/chat/completions", earlier).status, 400);
}

TEST(ServerReasoning, FlagNoneLeavesItInContent) {
  server_process srv({"-m", test_model(), "--chat-template", opening_think_template(), "--reasoning-format", "none"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  json req = {{"messages", {{{"role", "user"}, {"content", "The jury said"}}}}, {"max_tokens", 6}, {"temperature", 0}};
  auto r = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.json()["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_FALSE(r.json()["choices"][0]["message"]["content"].get<std::string>().empty());
  req["reasoning_format"] = "deepseek";  // a request's own choice wins
  auto split = post(srv, "/v1/chat/completions", req);
  EXPECT_TRUE(split.json()["choices"][0]["message"].contains("reasoning_content")) << split.body;
  server_process bad({"-m", test_model(), "--reasoning-format", "maybe"});
  EXPECT_EQ(bad.port(), 0);
}

}  // namespace
}  // namespace glia::test
