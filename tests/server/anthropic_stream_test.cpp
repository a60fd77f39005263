// The Messages API's event stream built from generated text cut into pieces of every size: the
// blocks it adds up to do not depend on the cut, calls in the model's syntax (tool_choice auto) come
// as tool_use blocks at the end, forced calls as they are written, reasoning as a thinking block.
// (The Brown model behind the live tests cannot decide to call a tool.)
#include <gtest/gtest.h>

#include "anthropic_events.h"
#include "server/anthropic_stream.h"

namespace glia::server {
namespace {

using nlohmann::json;

const nlohmann::ordered_json unit_tools = nlohmann::ordered_json::parse(
    R"([{"type":"function","function":{"name":"get_unit","parameters":{"type":"object","properties":{"unit":{"type":"string"}}}}}])");

reply_reading reading_for(tool_mode mode, tool_syntax syntax = tool_syntax::hermes) {
  reply_reading r;
  r.options.tools = unit_tools;
  r.options.mode = mode;
  r.options.function = mode == tool_mode::named ? "get_unit" : "";
  r.syntax = syntax;
  return r;
}

json without_ids(json m) {
  m.erase("id");
  for (json& b : m["content"]) b.erase("id");
  return m;
}

// The message the stream of `reply`, pushed `piece` bytes at a time, adds up to; the whole answer for
// the same reply must be the same message.
json streamed(const reply_reading& reading, const std::string& reply, size_t piece, finish_kind reason = finish_kind::stop,
              const std::vector<std::string>& stops = {}, const std::string& stop_string = {}) {
  anthropic_stream s(reading, stops, "m");
  std::string body = s.start(7, 2);
  for (size_t at = 0; at < reply.size(); at += piece) body += s.push(reply.substr(at, piece));
  job j;
  j.reason = reason;
  j.stop_string = stop_string;
  j.n_prompt = 7;
  j.n_reused = 2;
  j.n_generated = 5;
  body += s.finish(j);
  const json start_usage = test::events_of(body).front().data["message"]["usage"];
  json m = without_ids(test::message_of_stream(body));
  EXPECT_EQ(start_usage["input_tokens"], m["usage"]["input_tokens"]);
  EXPECT_EQ(start_usage["cache_read_input_tokens"], m["usage"]["cache_read_input_tokens"]);
  EXPECT_EQ(without_ids(json(anthropic_message(reading, stops, "m", reply, j))), m) << "piece " << piece;
  return m;
}

TEST(AnthropicStream, CallsInTheModelsSyntaxAreToolUseBlocks) {
  const std::string reply = R"(Let me check.
<tool_call>{"name": "get_unit", "arguments": {"unit": "c"}}</tool_call>
<tool_call>{"name": "get_unit", "arguments": {"unit": "f"}}</tool_call>)";
  const json expected = json::parse(R"([{"type":"text","text":"Let me check."},
    {"type":"tool_use","name":"get_unit","input":{"unit":"c"}},{"type":"tool_use","name":"get_unit","input":{"unit":"f"}}])");
  for (size_t piece : {size_t(1), size_t(3), size_t(7), reply.size()}) {
    const json m = streamed(reading_for(tool_mode::automatic), reply, piece);
    EXPECT_EQ(m["content"], expected) << "piece " << piece;
    EXPECT_EQ(m["stop_reason"], "tool_use");
    EXPECT_EQ(m["usage"]["input_tokens"], 5);
    EXPECT_EQ(m["usage"]["cache_read_input_tokens"], 2);
    EXPECT_EQ(m["usage"]["output_tokens"], 5);
  }
  // A call to a tool the request does not list is text, and so is a reply without calls.
  const json other = streamed(reading_for(tool_mode::automatic), R"(<tool_call>{"name": "rm", "arguments": {}}</tool_call>)", 4);
  ASSERT_EQ(other["content"].size(), 1u);
  EXPECT_EQ(other["content"][0]["type"], "text");
  EXPECT_EQ(other["stop_reason"], "end_turn");
}

TEST(AnthropicStream, ForcedCallsStreamTheirInput) {
  for (size_t piece : {size_t(1), size_t(5), size_t(100)}) {
    const json named = streamed(reading_for(tool_mode::named), R"({"unit": "c"})", piece);
    EXPECT_EQ(named["content"], json::parse(R"([{"type":"tool_use","name":"get_unit","input":{"unit":"c"}}])")) << piece;
    EXPECT_EQ(named["stop_reason"], "tool_use");
    const json required =
        streamed(reading_for(tool_mode::required), R"([{"name": "get_unit", "parameters": {"unit": "f"}}, {"name": "get_unit", "parameters": {}}])", piece);
    EXPECT_EQ(required["content"], json::parse(R"([{"type":"tool_use","name":"get_unit","input":{"unit":"f"}},
      {"type":"tool_use","name":"get_unit","input":{}}])"))
        << piece;
    EXPECT_EQ(required["stop_reason"], "tool_use");
  }
  // A named function's arguments cut by max_tokens: the call has no input, and the reply was cut.
  const json cut_named = streamed(reading_for(tool_mode::named), R"({"unit": "c)", 3, finish_kind::length);
  EXPECT_EQ(cut_named["content"], json::parse(R"([{"type":"tool_use","name":"get_unit","input":{}}])"));
  EXPECT_EQ(cut_named["stop_reason"], "max_tokens");
  // Whole arguments with the whitespace after them cut: the call is to be run.
  const json spaced = streamed(reading_for(tool_mode::named), "{\"unit\": \"c\"}\n  \n", 3, finish_kind::length);
  EXPECT_EQ(spaced["stop_reason"], "tool_use");
  // Cut by max_tokens before a call opened: what came is text.
  const json cut = streamed(reading_for(tool_mode::required), R"([{"na)", 2, finish_kind::length);
  EXPECT_EQ(cut["content"], json::parse(R"([{"type":"text","text":"[{\"na"}])"));
  EXPECT_EQ(cut["stop_reason"], "max_tokens");
}

TEST(AnthropicStream, ReasoningIsAThinkingBlockBeforeTheText) {
  reply_reading r;
  r.reasoning = reasoning_tags{"<think>", "</think>", "<think>"};
  const std::string reply = "<think>\nweigh it\n</think>\n\nIt is c.";
  for (size_t piece : {size_t(1), size_t(4), reply.size()}) {
    const json m = streamed(r, reply, piece, finish_kind::stop, {"STOP"}, "STOP");
    EXPECT_EQ(m["content"], json::parse(R"([{"type":"thinking","thinking":"weigh it","signature":""},{"type":"text","text":"It is c."}])"))
        << piece;
    EXPECT_EQ(m["stop_reason"], "stop_sequence");
    EXPECT_EQ(m["stop_sequence"], "STOP");
  }
}

TEST(AnthropicStream, AnErrorEndsTheOpenBlock) {
  anthropic_stream s(reply_reading{}, {}, "m");
  std::string body = s.start(3, 0);
  body += s.push("partial");
  body += s.error(api_error{500, "the engine failed"});
  const auto events = test::events_of(body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[events.size() - 2].name, "content_block_stop");
  EXPECT_EQ(events.back().name, "error");
  EXPECT_EQ(events.back().data["error"]["type"], "api_error");
}

}  // namespace
}  // namespace glia::server
