// POST /v1/messages through a live glia serve on the Brown model, against the chat endpoint as the
// oracle (the same request in OpenAI's words must give the same reply): reasoning as thinking blocks,
// a prefill continued, the stream's event grammar, and the errors and keys of Anthropic's clients.
// (tests/server/clients/anthropic.test.mjs drives it with the official SDK.)
#include <gtest/gtest.h>

#include <fstream>

#include "anthropic_events.h"
#include "http_helpers.h"
#include "think_fixtures.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

// A message's blocks with the ids left out (they are new on every answer).
json blocks_without_ids(json content) {
  for (json& b : content) b.erase("id");
  return content;
}

TEST(ServerMessages, ReasoningComesBackAsThinkingBlocks) {
  // The piece the Brown model writes fourth here (" the") made </think>: it reasons a little, then
  // answers. The chat endpoint's split is the oracle.
  constexpr int32_t the_id = 263;
  server_process srv({"-m", brown_with_control_tokens("brown_think_the.gguf", {{think_id, "<think>"}, {the_id, "</think>"}}), "--chat-template",
                      opening_think_template(), "-t", "1", "--kv-type", "f32"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  json req = {{"max_tokens", 24}, {"temperature", 0}, {"messages", {{{"role", "user"}, {"content", "The jury said"}}}}};
  const json chat = post(srv, "/v1/chat/completions", req).json();
  const json& msg = chat["choices"][0]["message"];
  ASSERT_NE(msg.value("reasoning_content", ""), "") << chat;
  ASSERT_NE(msg["content"], "") << chat;
  const json expected = {{{"type", "thinking"}, {"thinking", msg["reasoning_content"]}, {"signature", ""}},
                         {{"type", "text"}, {"text", msg["content"]}}};
  http_reply whole = post(srv, "/v1/messages", req);
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json()["content"], expected);
  req["stream"] = true;
  http_reply streamed = post(srv, "/v1/messages", req);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(message_of_stream(streamed.body)["content"], expected) << streamed.body;
  // Reasoning cut short by max_tokens is one thinking block.
  req["max_tokens"] = 2;
  const json cut = message_of_stream(post(srv, "/v1/messages", req).body);
  ASSERT_EQ(cut["content"].size(), 1u) << cut;
  EXPECT_EQ(cut["content"][0]["type"], "thinking");
  EXPECT_EQ(cut["stop_reason"], "max_tokens");
}

TEST(ServerMessages, APrefillIsContinuedAsTheChatEndpointContinuesIt) {
  server_process srv({"-m", test_model(), "--chat-template", llama2_chat_template(), "-t", "1", "--kv-type", "f32"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  const json messages = {{{"role", "user"}, {"content", "Tell me"}}, {{"role", "assistant"}, {"content", "The jury said"}}};
  const json chat = post(srv, "/v1/chat/completions",
                         json{{"max_tokens", 10}, {"temperature", 0}, {"messages", messages}, {"continue_final_message", true}})
                        .json();
  const json m = post(srv, "/v1/messages", json{{"max_tokens", 10}, {"temperature", 0}, {"messages", messages}}).json();
  ASSERT_EQ(m["content"].size(), 1u) << m;
  EXPECT_EQ(m["content"][0]["text"], chat["choices"][0]["message"]["content"]) << m;
  EXPECT_EQ(m["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
}

TEST(ServerMessages, StreamsAddUpToTheWholeMessageAndNameTheirStop) {
  server_process srv({"-m", test_model(), "--chat-template", llama2_chat_template(), "-t", "1", "--kv-type", "f32"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  json req = {{"model", "claude-like"}, {"max_tokens", 20}, {"temperature", 0}, {"messages", {{{"role", "user"}, {"content", "The jury said"}}}}};
  const json whole = post(srv, "/v1/messages", req).json();
  ASSERT_EQ(whole["content"].size(), 1u) << whole;
  EXPECT_EQ(whole["model"], "claude-like");
  const std::string text = whole["content"][0]["text"];
  const std::string stop = text.substr(text.size() / 2, 3);
  for (bool stream : {false, true}) {
    req["stream"] = stream;
    req["stop_sequences"] = {stop};
    http_reply r = post(srv, "/v1/messages", req);
    ASSERT_EQ(r.status, 200) << r.body;
    const json m = stream ? message_of_stream(r.body) : r.json();
    EXPECT_EQ(m["stop_reason"], "stop_sequence") << r.body;
    EXPECT_EQ(m["stop_sequence"], stop) << r.body;
    EXPECT_EQ(m["content"][0]["text"], text.substr(0, text.find(stop))) << r.body;
    req.erase("stop_sequences");
    if (stream) {
      const std::string body = post(srv, "/v1/messages", req).body;
      const json again = message_of_stream(body);
      // The same prompt again: message_start's usage says what the cache held, as message_delta's does.
      const json start_usage = events_of(body).front().data["message"]["usage"];
      EXPECT_GT(again["usage"]["cache_read_input_tokens"].get<int>(), 0) << body;
      EXPECT_EQ(start_usage["cache_read_input_tokens"], again["usage"]["cache_read_input_tokens"]) << body;
      EXPECT_EQ(start_usage["input_tokens"], again["usage"]["input_tokens"]) << body;
      EXPECT_EQ(blocks_without_ids(again["content"]), blocks_without_ids(whole["content"]));
      EXPECT_EQ(again["stop_reason"], whole["stop_reason"]);
      EXPECT_EQ(again["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
    }
  }
  // The same prompt again reads its prefix from the slot's cache, and usage says so.
  req["stream"] = false;
  const json usage = post(srv, "/v1/messages", req).json()["usage"];
  EXPECT_GT(usage["cache_read_input_tokens"].get<int>(), 0) << usage;
  const json counted = post(srv, "/v1/messages/count_tokens", json{{"messages", req["messages"]}}).json();
  EXPECT_EQ(counted["input_tokens"].get<int>(), usage["input_tokens"].get<int>() + usage["cache_read_input_tokens"].get<int>());
}

TEST(ServerMessages, ToolChoiceAutoReadsTheModelsSyntaxAndNoneShowsTools) {
  // A small template that shows tools and writes calls as Hermes does.
  const std::string tmpl = write_scratch("messages_tools.jinja", "{%- if tools %}tools:{% for t in tools %} {{ t.function.name }}: {{ t.function.parameters | tojson }}{% endfor %}\n{% endif %}"
                         "{%- for m in messages %}{{ m.role }}: {{ m.content or '' }}"
                         "{%- for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}\n{% endfor %}"
                         "{%- if add_generation_prompt %}assistant:{% endif %}");
  server_process srv({"-m", test_model(), "--chat-template", tmpl, "-t", "1"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  const json tools = {{{"name", "get_unit"}, {"input_schema", {{"type", "object"}, {"properties", {{"unit", {{"type", "string"}}}}}}}}};
  const json messages = {{{"role", "user"}, {"content", "Which unit?"}}};
  // The Brown model writes no call: its reply is text, and the stop reason is not tool_use.
  for (const char* choice : {"auto", "none"}) {
    const json m =
        post(srv, "/v1/messages", json{{"max_tokens", 6}, {"temperature", 0}, {"tools", tools}, {"tool_choice", {{"type", choice}}}, {"messages", messages}})
            .json();
    ASSERT_TRUE(m.contains("content")) << m;
    for (const json& b : m["content"]) EXPECT_EQ(b["type"], "text") << m;
    EXPECT_NE(m["stop_reason"], "tool_use") << m;
  }
  // The template is shown the tools in OpenAI's shape.
  const int with = post(srv, "/v1/messages/count_tokens", json{{"tools", tools}, {"messages", messages}}).json()["input_tokens"];
  const int none = post(srv, "/v1/messages/count_tokens", json{{"tools", tools}, {"tool_choice", {{"type", "none"}}}, {"messages", messages}})
                       .json()["input_tokens"];
  const int without = post(srv, "/v1/messages/count_tokens", json{{"messages", messages}}).json()["input_tokens"];
  EXPECT_GT(with, without + 5);
  EXPECT_EQ(none, with);
  // Counting says how long a prompt is, also when it does not fit the context (256 tokens).
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "a ";
  const http_reply counted = post(srv, "/v1/messages/count_tokens", json{{"messages", {{{"role", "user"}, {"content", long_text}}}}});
  ASSERT_EQ(counted.status, 200) << counted.body;
  EXPECT_GT(counted.json()["input_tokens"].get<int>(), 300);
}

TEST(ServerMessages, KeysAndErrorsAreAnthropics) {
  server_process srv({"-m", test_model(), "--api-key", "k1", "--max-body", "2048", "-t", "1"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  const std::string body = R"({"max_tokens":2,"messages":[{"role":"user","content":"hi"}]})";
  EXPECT_EQ(post_with_headers(srv, "/v1/messages", body, {{"x-api-key", "k1"}, {"anthropic-version", "2023-06-01"}}).status, 200);
  EXPECT_EQ(post_with_headers(srv, "/v1/messages", body, {{"Authorization", "Bearer k1"}}).status, 200);
  auto expect_error = [](const http_reply& r, int status, const std::string& type) {
    EXPECT_EQ(r.status, status) << r.body;
    const json j = r.json();
    EXPECT_EQ(j["type"], "error") << r.body;
    EXPECT_EQ(j["error"]["type"], type) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string()) << r.body;
  };
  expect_error(post_with_headers(srv, "/v1/messages", body, {{"x-api-key", "k2"}}), 401, "authentication_error");
  expect_error(post_with_headers(srv, "/v1/messages/count_tokens", body, {}), 401, "authentication_error");
  const httplib::Headers key = {{"x-api-key", "k1"}};
  expect_error(post_with_headers(srv, "/v1/messages", R"({"messages":[]})", key), 400, "invalid_request_error");
  expect_error(post_with_headers(srv, "/v1/messages", std::string(3000, ' '), key), 413, "request_too_large");
  expect_error(post_with_headers(srv, "/v1/messages/batches", body, key), 404, "not_found_error");
  auto cli = srv.client();
  auto got = cli.Get("/v1/messages", httplib::Headers{{"x-api-key", "k1"}});
  ASSERT_TRUE(got);
  expect_error(http_reply{got->status, got->body, got->headers}, 405, "invalid_request_error");
  // The OpenAI routes keep OpenAI's shape.
  const json openai = post_with_headers(srv, "/v1/chat/completions", R"({"messages":[]})", key).json();
  EXPECT_TRUE(openai.contains("error") && openai["error"].contains("param")) << openai;
  // A prompt longer than the context.
  std::string long_text;
  for (int i = 0; i < 700; ++i) long_text += "a ";
  const http_reply too_long =
      post_with_headers(srv, "/v1/messages", json{{"max_tokens", 2}, {"messages", {{{"role", "user"}, {"content", long_text}}}}}.dump(), key);
  expect_error(too_long, 400, "invalid_request_error");
  EXPECT_NE(too_long.body.find("prompt is too long: "), std::string::npos) << too_long.body;
}

}  // namespace
}  // namespace glia::test
