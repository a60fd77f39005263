// Tool calls through a live glia serve: the forced choices (a named function, "required") answered
// as OpenAI answers them, whole and streamed; tools shown to the model through the template; replies
// read in automatic mode; the refusal for a template that never reads tools. The Brown model cannot
// decide to call a tool, so the reading of calls in each model's syntax is tested in tool_calls_test.
#include <gtest/gtest.h>

#include <fstream>

#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

// A small template in the Hermes style (Qwen's): tools in the system turn, calls in <tool_call> tags.
std::string hermes_style_template() {
  // (Names only: the Brown model's context is 256 tokens.)
  return write_scratch("tool_template.jinja",
                       "{%- if tools %}tools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n{% endif %}"
                       "{%- for m in messages %}{{ m.role }}: {% if m.content %}{{ m.content }}{% endif %}"
                       "{%- for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}\n{% endfor %}"
                       "{%- if add_generation_prompt %}assistant:{% endif %}");
}

const json unit_tool = json::parse(R"({"type": "function", "function": {"name": "get_unit", "description": "the unit",
    "parameters": {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"], "additionalProperties": false}}})");
const json city_tool = json::parse(R"({"type": "function", "function": {"name": "find_city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"], "additionalProperties": false}}})");

json tool_request(const json& choice) {
  return {{"messages", {{{"role", "user"}, {"content", "What unit is it in?"}}}},
          {"tools", {unit_tool, city_tool}},
          {"tool_choice", choice},
          {"max_tokens", 60},
          {"seed", 7}};
}

class ServerTools : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { srv = new server_process({"-m", test_model(), "--chat-template", hermes_style_template()}); }
  static void TearDownTestSuite() {
    delete srv;
    srv = nullptr;
  }
  void SetUp() override { ASSERT_NE(srv->port(), 0) << srv->log(); }
  static server_process* srv;
};
server_process* ServerTools::srv = nullptr;

void expect_unit_call(const json& call) {
  EXPECT_EQ(call["type"], "function");
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_")) << call;
  EXPECT_EQ(call["function"]["name"], "get_unit");
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  ASSERT_TRUE(args.is_object()) << call;
  EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << args;
}

TEST_F(ServerTools, NamedFunctionWholeAndStreamed) {
  const json req = tool_request({{"type", "function"}, {"function", {{"name", "get_unit"}}}});
  auto r = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop") << r.body;  // OpenAI's (and vLLM's) for a named function
  EXPECT_TRUE(choice["message"]["content"].is_null()) << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  expect_unit_call(choice["message"]["tool_calls"][0]);

  json sreq = req;
  sreq["stream"] = true;
  auto s = post(*srv, "/v1/chat/completions", sreq);
  ASSERT_EQ(s.status, 200);
  const stream_result sr = parse_stream(s.body, true);
  EXPECT_TRUE(sr.done && sr.well_formed) << s.body;
  EXPECT_EQ(sr.finish_reason, "stop");
  EXPECT_EQ(sr.text, "");  // no content: the reply was the call
  // Who speaks goes out at once (the reply is held or streamed as a call); then the arguments stream
  // as they come: the first chunk opens the call, the others add to index 0.
  ASSERT_FALSE(sr.chunks.empty());
  EXPECT_EQ(sr.chunks[0]["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}})) << s.body;
  json call;
  std::string arguments;
  size_t call_chunks = 0;
  for (const json& c : sr.chunks) {
    if (c["choices"].empty() || !c["choices"][0]["delta"].contains("tool_calls")) continue;
    const json& tc = c["choices"][0]["delta"]["tool_calls"];
    ASSERT_EQ(tc.size(), 1u);
    EXPECT_EQ(tc[0]["index"], 0);
    EXPECT_EQ(tc[0].contains("id"), call_chunks == 0) << c;
    if (call_chunks++ == 0) call = tc[0];
    arguments += tc[0]["function"]["arguments"].get<std::string>();
  }
  EXPECT_GT(call_chunks, 1u) << s.body;
  call["function"]["arguments"] = arguments;
  expect_unit_call(call);
  // Same seed, same reply.
  EXPECT_EQ(arguments, choice["message"]["tool_calls"][0]["function"]["arguments"]);
}

TEST_F(ServerTools, RequiredChoosesAmongTheTools) {
  json req = tool_request("required");
  req["parallel_tool_calls"] = false;
  req["max_tokens"] = 200;  // the whole context: a walk that long would be a grammar bug
  auto r = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls") << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;  // parallel_tool_calls false: one at most
  const json call = choice["message"]["tool_calls"][0];
  const std::string name = call["function"]["name"].get<std::string>();
  EXPECT_TRUE(name == "get_unit" || name == "find_city") << call;
  EXPECT_TRUE(json::parse(call["function"]["arguments"].get<std::string>()).is_object()) << call;
}

// Streamed, "required" calls come as they are written, as vLLM streams them: each opens (index, id,
// name) once its name is whole, and its argument pieces add up to the whole reply's arguments.
TEST_F(ServerTools, RequiredCallsStreamAsTheyCome) {
  // The calls a stream carries, put together from its pieces; and how many chunks carried them.
  const auto streamed_calls = [](const stream_result& sr, int& call_chunks) {
    json calls = json::array();
    for (const json& c : sr.chunks) {
      if (c["choices"].empty() || !c["choices"][0]["delta"].contains("tool_calls")) continue;
      ++call_chunks;
      for (const json& d : c["choices"][0]["delta"]["tool_calls"]) {
        const size_t i = d["index"].get<size_t>();
        if (d.contains("id")) {
          EXPECT_EQ(i, calls.size());
          EXPECT_EQ(d["type"], "function");
          calls.push_back({{"id", d["id"]}, {"name", d["function"]["name"]}, {"arguments", ""}});
        }
        if (i >= calls.size()) return json();  // arguments for a call that never opened
        calls[i]["arguments"] = calls[i]["arguments"].get<std::string>() + d["function"]["arguments"].get<std::string>();
      }
    }
    return calls;
  };
  json req = tool_request("required");
  req["temperature"] = 0;
  req["max_tokens"] = 200;
  req["parallel_tool_calls"] = false;
  auto r = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json whole = r.json()["choices"][0];
  ASSERT_EQ(whole["finish_reason"], "tool_calls") << r.body;
  req["stream"] = true;
  auto s = post(*srv, "/v1/chat/completions", req);
  const stream_result sr = parse_stream(s.body, true);
  EXPECT_TRUE(sr.done && sr.well_formed) << s.body;
  EXPECT_EQ(sr.text, "");
  EXPECT_EQ(sr.finish_reason, "tool_calls");
  int call_chunks = 0;
  const json calls = streamed_calls(sr, call_chunks);
  ASSERT_EQ(calls.size(), 1u) << s.body;
  EXPECT_EQ(calls[0]["name"], whole["message"]["tool_calls"][0]["function"]["name"]);
  EXPECT_EQ(calls[0]["arguments"], whole["message"]["tool_calls"][0]["function"]["arguments"]);
  EXPECT_GT(call_chunks, 2);  // piece by piece, not one chunk at the end

  // With parallel calls the greedy Brown model writes call after call until max_tokens cuts it: the
  // whole reply is then text (not a list of calls), while the stream has sent the calls as they came,
  // each whole but the last, and says "length", as OpenAI's does for a cut call.
  req["parallel_tool_calls"] = true;
  req["max_tokens"] = 120;
  auto cut = parse_stream(post(*srv, "/v1/chat/completions", req).body, true);
  EXPECT_EQ(cut.finish_reason, "length");
  int cut_chunks = 0;
  const json cut_calls = streamed_calls(cut, cut_chunks);
  ASSERT_GE(cut_calls.size(), 2u);
  EXPECT_TRUE(json::parse(cut_calls[0]["arguments"].get<std::string>()).is_object());
  req["stream"] = false;
  auto cut_whole = post(*srv, "/v1/chat/completions", req);
  EXPECT_EQ(cut_whole.json()["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(cut_whole.json()["choices"][0]["message"]["content"].get<std::string>().starts_with("[")) << cut_whole.body;
}

TEST_F(ServerTools, AutomaticReadsTheReplyAndStreamsItsContent) {
  json req = tool_request("auto");
  req["temperature"] = 0;
  req["max_tokens"] = 12;
  auto r = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json msg = r.json()["choices"][0]["message"];
  // The Brown model writes English, not calls: the reply is content, as without tools.
  EXPECT_FALSE(msg.contains("tool_calls")) << r.body;
  ASSERT_TRUE(msg["content"].is_string());
  EXPECT_FALSE(msg["content"].get<std::string>().empty());
  req["stream"] = true;
  auto s = post(*srv, "/v1/chat/completions", req);
  const stream_result sr = parse_stream(s.body, true);
  EXPECT_TRUE(sr.done && sr.well_formed) << s.body;
  EXPECT_EQ(sr.text, msg["content"].get<std::string>());
  EXPECT_EQ(sr.finish_reason, r.json()["choices"][0]["finish_reason"]);
}

TEST_F(ServerTools, ToolsAndEarlierCallsReachThePrompt) {
  json req = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 1}, {"temperature", 0}};
  auto plain = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(plain.status, 200) << plain.body;
  req["tools"] = {unit_tool};
  req["tool_choice"] = "none";
  auto with_tools = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(with_tools.status, 200) << with_tools.body;
  EXPECT_FALSE(with_tools.json()["choices"][0]["message"].contains("tool_calls"));
  const int p0 = plain.json()["usage"]["prompt_tokens"].get<int>();
  EXPECT_GT(with_tools.json()["usage"]["prompt_tokens"].get<int>(), p0 + 3);
  // A finished round: the assistant's call (arguments as JSON text, as clients send them) and its result.
  req.erase("tools");
  req.erase("tool_choice");
  req["messages"] = json::parse(R"([{"role": "user", "content": "Hello"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_unit", "arguments": "{\"unit\": \"c\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "c"}])");
  auto round = post(*srv, "/v1/chat/completions", req);
  ASSERT_EQ(round.status, 200) << round.body;
  EXPECT_GT(round.json()["usage"]["prompt_tokens"].get<int>(), p0 + 8);
}

TEST(ServerToolsRefused, TemplateThatNeverReadsTools) {
  server_process srv({"-m", test_model()});  // ChatML: no tools in it
  ASSERT_NE(srv.port(), 0) << srv.log();
  for (const json& choice : {json("auto"), json("required")}) {
    auto r = post(srv, "/v1/chat/completions", tool_request(choice));
    ASSERT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["param"], "tools");
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("does not read 'tools'"), std::string::npos) << r.body;
  }
  json none = tool_request("none");
  none["max_tokens"] = 2;
  EXPECT_EQ(post(srv, "/v1/chat/completions", none).status, 200);
}

}  // namespace
}  // namespace glia::test
