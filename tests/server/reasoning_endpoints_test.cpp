// A reasoning model's reply through a live glia serve: with a template that opens the reasoning
// (as QwQ's and the R1 distills' do), the Brown model's text is reasoning_content, whole and streamed
// alike; reasoning_format "none" (per request, or --reasoning-format none) leaves it in content.
#include <gtest/gtest.h>

#include <fstream>

#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

std::string opening_think_template() {
  const std::string path = scratch("think_template.jinja");
  std::ofstream out(path);
  out << "{%- for m in messages %}{{ m.role }}: {{ m.content.split('</think>')[-1] }}\n{% endfor %}"
         "{%- if add_generation_prompt %}assistant: <think>\n{% endif %}";
  return path;
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
  // A constrained reply is content: what the schema asked for.
  req.erase("reasoning_format");
  req["response_format"] = {{"type", "json_object"}};
  req["max_tokens"] = 40;
  auto constrained = post(srv, "/v1/chat/completions", req);
  ASSERT_EQ(constrained.status, 200) << constrained.body;
  EXPECT_FALSE(constrained.json()["choices"][0]["message"].contains("reasoning_content")) << constrained.body;
  EXPECT_TRUE(constrained.json()["choices"][0]["message"]["content"].get<std::string>().starts_with("{")) << constrained.body;
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
