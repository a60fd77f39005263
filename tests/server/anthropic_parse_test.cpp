// Anthropic Messages API bodies read as the chat requests they stand for (no model needed), the
// stop-string report the stop reason comes from, and the answer shapes.
#include <gtest/gtest.h>

#include "runtime/stop_filter.h"
#include "server/anthropic_request.h"
#include "server/anthropic_responses.h"

namespace glia::server {
namespace {

using ojson = nlohmann::ordered_json;
const sampler_params anthropic_defaults{};

api_result<messages_request> parse(const std::string& body) { return parse_messages_request(body, anthropic_defaults); }

void expect_refused(const std::string& body, const std::string& needle) {
  auto r = parse(body);
  ASSERT_FALSE(r.ok()) << body;
  EXPECT_EQ(r.error().status, 400);
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(AnthropicParse, SystemTurnsAndSampling) {
  auto r = parse(R"({"model":"m","max_tokens":9,"system":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}],
    "messages":[{"role":"user","content":"one"},{"role":"user","content":[{"type":"text","text":"two"}]},
                {"role":"assistant","content":"three"},{"role":"user","content":"four"}],
    "temperature":0.5,"top_p":0.9,"top_k":7,"stop_sequences":["END"],"stream":true,"metadata":{"user_id":"u"},"seed":5})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const completion_request& c = r.value().chat;
  const ojson expected = ojson::parse(R"([{"role":"system","content":"a\nb"},{"role":"user","content":"one\ntwo"},
    {"role":"assistant","content":"three"},{"role":"user","content":"four"}])");
  EXPECT_EQ(c.messages, expected);
  EXPECT_EQ(c.params.max_tokens, 9);
  EXPECT_FLOAT_EQ(c.params.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(c.params.sampling.top_p, 0.9f);
  EXPECT_EQ(c.params.sampling.top_k, 7);
  EXPECT_EQ(c.params.sampling.seed, 5u);
  EXPECT_TRUE(c.params.stream);
  EXPECT_EQ(c.params.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.value().stop_sequences, std::vector<std::string>{"END"});
  EXPECT_EQ(c.model, "m");
  EXPECT_TRUE(c.add_generation_prompt);
  EXPECT_FALSE(c.continue_final_message);
}

TEST(AnthropicParse, ToolUseResultsAndThinking) {
  auto r = parse(R"({"max_tokens":5,"messages":[
    {"role":"user","content":"weather?"},
    {"role":"assistant","content":[{"type":"thinking","thinking":"let me see","signature":"s"},{"type":"redacted_thinking","data":"x"},
      {"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"w","input":{"city":"Oslo","n":[1,2]}},
      {"type":"tool_use","id":"toolu_2","name":"w","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"rain"},
      {"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"sun"},{"type":"text","text":"wind"}],"is_error":true},
      {"type":"text","text":"and now?"}]}],
    "tools":[{"name":"w","description":"weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],
    "tool_choice":{"type":"auto","disable_parallel_tool_use":true}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const completion_request& c = r.value().chat;
  const ojson expected = ojson::parse(R"([{"role":"user","content":"weather?"},
    {"role":"assistant","content":"Checking.","tool_calls":[
      {"id":"toolu_1","type":"function","function":{"name":"w","arguments":{"city":"Oslo","n":[1,2]}}},
      {"id":"toolu_2","type":"function","function":{"name":"w","arguments":{}}}],"reasoning_content":"let me see"},
    {"role":"tool","content":"rain","tool_call_id":"toolu_1"},
    {"role":"tool","content":"Error: sun\nwind","tool_call_id":"toolu_2"},
    {"role":"user","content":"and now?"}])");
  EXPECT_EQ(nlohmann::json(c.messages), nlohmann::json(expected)) << c.messages.dump();  // key order aside
  EXPECT_EQ(c.tools.mode, tool_mode::automatic);
  EXPECT_FALSE(c.tools.parallel);
  ASSERT_EQ(c.tools.tools.size(), 1u);
  EXPECT_EQ(c.tools.tools[0]["function"]["name"], "w");
  EXPECT_EQ(c.tools.tools[0]["function"]["parameters"]["properties"]["city"]["type"], "string");
}

TEST(AnthropicParse, ToolChoices) {
  const std::string tools = R"("tools":[{"name":"w","input_schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}])";
  auto with = [&](const std::string& choice) {
    return parse(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],)" + tools + R"(,"tool_choice":)" + choice + "}");
  };
  auto any = with(R"({"type":"any"})");
  ASSERT_TRUE(any.ok()) << any.error().message;
  EXPECT_EQ(any.value().chat.tools.mode, tool_mode::required);
  EXPECT_TRUE(any.value().chat.params.sampling.grammar != nullptr);
  auto named = with(R"({"type":"tool","name":"w"})");
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named.value().chat.tools.mode, tool_mode::named);
  EXPECT_EQ(named.value().chat.tools.function, "w");
  auto none = with(R"({"type":"none"})");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(none.value().chat.tools.mode, tool_mode::none);
  EXPECT_FALSE(with(R"({"type":"tool","name":"other"})").ok());
  EXPECT_FALSE(with(R"({"type":"sometimes"})").ok());
  EXPECT_FALSE(with(R"("auto")").ok());
}

TEST(AnthropicParse, PrefillAndThinking) {
  auto r = parse(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"The answer is"}],
    "thinking":{"type":"enabled","budget_tokens":2048}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().chat.continue_final_message);
  EXPECT_FALSE(r.value().chat.add_generation_prompt);
  EXPECT_EQ(r.value().chat.template_kwargs["enable_thinking"], true);
  auto off = parse(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"}})");
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off.value().chat.template_kwargs["enable_thinking"], false);
  // The client's own template variables win.
  auto own = parse(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"disabled"},
    "chat_template_kwargs":{"enable_thinking":true}})");
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(own.value().chat.template_kwargs["enable_thinking"], true);
}

TEST(AnthropicParse, AdaptiveThinkingEffortAndFormat) {
  auto r = parse(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"adaptive","display":"summarized"},
    "output_config":{"effort":"max","format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().chat.template_kwargs["enable_thinking"], true);
  EXPECT_EQ(r.value().chat.template_kwargs["reasoning_effort"], "high");
  EXPECT_NE(r.value().chat.params.sampling.grammar, nullptr);
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"output_config":{"effort":"huge"}})", "effort");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"output_config":{"format":{"type":"json_schema"}},"grammar":"root ::= \"a\""})",
                 "output_config.format");
}

TEST(AnthropicParse, AnEmptyFinalAssistantMessageAsksForAReply) {
  auto r = parse(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[]}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r.value().chat.continue_final_message);
  EXPECT_EQ(r.value().chat.messages.size(), 1u);
  auto thinking_only = parse(
      R"({"max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":""}]}]})");
  ASSERT_TRUE(thinking_only.ok()) << thinking_only.error().message;
  EXPECT_FALSE(thinking_only.value().chat.continue_final_message);
}

TEST(AnthropicParse, ErrorsNameAnthropicsFields) {
  const std::string body = R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],
    "tools":[{"name":"w","input_schema":{"type":"array"}}],"tool_choice":{"type":"any"}})";
  auto r = parse(body);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("input_schema"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("function"), std::string::npos) << r.error().message;
  EXPECT_EQ(in_anthropic_terms(bad_request("set 'tool_choice' to \"none\"")).message, "set 'tool_choice' to {\"type\": \"none\"}");
}

TEST(AnthropicParse, CountingNeedsNoMaxTokens) {
  EXPECT_TRUE(parse_messages_request(R"({"model":"m","messages":[{"role":"user","content":"x"}]})", anthropic_defaults, true).ok());
}

TEST(AnthropicParse, Refusals) {
  const std::string user = R"("messages":[{"role":"user","content":"x"}])";
  expect_refused("{" + user + "}", "'max_tokens' is required");
  expect_refused(R"({"max_tokens":0,)" + user + "}", "max_tokens");
  expect_refused(R"({"max_tokens":1.5,)" + user + "}", "max_tokens");
  expect_refused(R"({"max_tokens":5,"messages":[]})", "must not be empty");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"system","content":"x"}]})", "top-level 'system'");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user"}]})", "content");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":"x","name":"n"}]})", "'name'");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})", "\"image\"");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}]})", "tool_use");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"b","input":"{}"}]}]})",
                 "object 'input'");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"image"}]}]}]})",
                 "text blocks");
  expect_refused(R"({"max_tokens":5,"system":[{"type":"image"}],)" + user + "}", "'system'");
  expect_refused(R"({"max_tokens":5,"top_q":1,)" + user + "}", "top_q: Extra inputs are not permitted");
  // Fields of Anthropic's that only steer its own servers are taken.
  EXPECT_TRUE(parse(R"({"max_tokens":5,"context_management":{"edits":[]},"cache_control":{"type":"ephemeral"},
    "tools":[{"name":"w","input_schema":{"type":"object"},"strict":true,"eager_input_streaming":true,"defer_loading":false}],)" + user + "}")
                  .ok());
  expect_refused(R"({"max_tokens":5,"stop_sequences":"x",)" + user + "}", "stop_sequences");
  expect_refused(R"({"max_tokens":5,"stop_sequences":[""],)" + user + "}", "stop_sequences");
  expect_refused(R"({"max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],)" + user + "}", "web_search");
  expect_refused(R"({"max_tokens":5,"tools":[{"name":"w"}],)" + user + "}", "input_schema");
  expect_refused(R"({"max_tokens":5,"tool_choice":{"type":"any"},)" + user + "}", "needs 'tools'");
  expect_refused(R"({"max_tokens":5,"thinking":{"type":"enabled"},)" + user + "}", "budget_tokens");
  expect_refused(R"({"max_tokens":5,"thinking":{"type":"on"},)" + user + "}", "thinking.type");
  expect_refused(R"({"max_tokens":5,"temperature":-1,)" + user + "}", "temperature");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}],
    "tools":[{"name":"w","input_schema":{"type":"object"}}]})",
                 "continues a final assistant message");
  expect_refused(R"({"max_tokens":5,"system":[{"type":5,"text":"x"}],)" + user + "}", "text blocks");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":null}]}]}]})",
                 "text blocks");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"a"}]}]})",
                 "must come before its text");
  expect_refused(R"({"max_tokens":5,"tools":[{"name":"w","description":5,"input_schema":{"type":"object"}}],)" + user + "}", "'description'");
  expect_refused(R"({"max_tokens":5,"messages":[{"role":"assistant","content":""}]})", "no turn");
  expect_refused("[1]", "JSON object");
  expect_refused("{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "UTF-8");
}

TEST(AnthropicResponses, StopReasons) {
  job j;
  j.reason = finish_kind::stop;
  std::string matched;
  EXPECT_EQ(stop_reason_of(j, false, {"END"}, matched), "end_turn");
  j.stop_string = "</s>";  // the template's end of turn is no stop sequence of the client's
  EXPECT_EQ(stop_reason_of(j, false, {"END"}, matched), "end_turn");
  EXPECT_TRUE(matched.empty());
  j.stop_string = "END";
  EXPECT_EQ(stop_reason_of(j, false, {"x", "END"}, matched), "stop_sequence");
  EXPECT_EQ(matched, "END");
  EXPECT_EQ(stop_reason_of(j, true, {}, matched), "tool_use");
  j.reason = finish_kind::length;
  EXPECT_EQ(stop_reason_of(j, false, {}, matched), "max_tokens");
  EXPECT_EQ(stop_reason_of(j, true, {}, matched), "tool_use");  // whole calls, whitespace after them cut
}

TEST(AnthropicResponses, ShapesAndIds) {
  EXPECT_EQ(anthropic_error_json(api_error{400, "bad"}), R"({"type":"error","error":{"type":"invalid_request_error","message":"bad"}})");
  EXPECT_NE(anthropic_error_json(api_error{401, "k"}).find("authentication_error"), std::string::npos);
  EXPECT_NE(anthropic_error_json(api_error{503, "busy"}).find("overloaded_error"), std::string::npos);
  EXPECT_NE(anthropic_error_json(api_error{500, "x"}).find("\"api_error\""), std::string::npos);
  EXPECT_EQ(anthropic_event({{"type", "ping"}}), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
  EXPECT_EQ(new_message_id().size(), 28u);
  EXPECT_NE(new_message_id(), new_message_id());
  EXPECT_TRUE(new_tool_use_id().starts_with("toolu_"));
  EXPECT_TRUE(is_anthropic_path("/v1/messages"));
  EXPECT_TRUE(is_anthropic_path("/v1/messages/count_tokens"));
  EXPECT_FALSE(is_anthropic_path("/v1/messagesx"));
  const ojson u = anthropic_usage(10, 4, 3);
  EXPECT_EQ(u["input_tokens"], 6);
  EXPECT_EQ(u["cache_read_input_tokens"], 4);
  EXPECT_EQ(u["output_tokens"], 3);
}

TEST(StopFilter, NamesTheStopStringThatWasHit) {
  stop_filter f({"xyz", "b", "ab"});
  bool hit = false;
  EXPECT_EQ(f.push("a", hit), "");  // "a" may start "ab"
  EXPECT_FALSE(hit);
  EXPECT_TRUE(f.matched().empty());
  EXPECT_EQ(f.push("bc", hit), "");
  EXPECT_TRUE(hit);
  EXPECT_EQ(f.matched(), "ab");  // the first to appear, though "b" was given before it
}

}  // namespace
}  // namespace glia::server
