// OpenAI's Responses API without a model: request bodies read as the chat requests they stand for,
// and the answer built from replies cut into pieces of every size (the streamed events add up to the
// whole response, numbered in order). tests/server/clients/compat.test.mjs drives the live endpoint
// with the official SDK.
#include <gtest/gtest.h>

#include "anthropic_events.h"
#include "server/responses_api_output.h"
#include "server/responses_api_request.h"

namespace glia::server {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;
const sampler_params responses_defaults{};

api_result<responses_api_request> parse(const std::string& body) { return parse_responses_api_request(body, responses_defaults); }

TEST(ResponsesApiParse, InputItemsBecomeChatMessages) {
  auto r = parse(R"({"model":"m","instructions":"be brief","max_output_tokens":9,"temperature":0.5,"input":[
    {"role":"developer","content":"rules"},
    {"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
    {"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"think"}]},
    {"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Let me see.","annotations":[]}]},
    {"type":"function_call","id":"fc_1","call_id":"call_1","name":"w","arguments":"{\"city\":\"Oslo\"}","status":"completed"},
    {"type":"function_call_output","call_id":"call_1","output":"rain"},
    {"role":"user","content":"and now?"}],
    "tools":[{"type":"function","name":"w","description":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":false}],
    "tool_choice":"auto","parallel_tool_calls":false,"store":true,"metadata":{"k":"v"},"reasoning":{"effort":"low","summary":"auto"}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const completion_request& c = r.value().chat;
  // Instructions and the developer message before the conversation are one system message.
  const json expected = json::parse(R"([{"role":"system","content":"be brief\n\nrules"},
    {"role":"user","content":"a\nb"},
    {"role":"assistant","content":"Let me see.","reasoning_content":"think","tool_calls":[
      {"id":"call_1","type":"function","function":{"name":"w","arguments":{"city":"Oslo"}}}]},
    {"role":"tool","content":"rain","tool_call_id":"call_1"},{"role":"user","content":"and now?"}])");
  EXPECT_EQ(json(c.messages), expected) << c.messages.dump();
  EXPECT_EQ(c.params.max_tokens, 9);
  EXPECT_FLOAT_EQ(c.params.sampling.temperature, 0.5f);
  EXPECT_EQ(c.tools.mode, tool_mode::automatic);
  EXPECT_FALSE(c.tools.parallel);
  EXPECT_EQ(c.template_kwargs["reasoning_effort"], "low");
  const ojson& s = r.value().settings;
  EXPECT_EQ(s["instructions"], "be brief");
  EXPECT_EQ(s["max_output_tokens"], 9);
  EXPECT_EQ(s["temperature"], 0.5);
  EXPECT_EQ(s["metadata"]["k"], "v");
  EXPECT_EQ(s["store"], false);  // nothing is kept, whatever was asked
  EXPECT_EQ(s["tools"][0]["name"], "w");
}

TEST(ResponsesApiParse, ReasoningGoesWithTheTurnItCameBefore) {
  auto r = parse(R"({"input":[{"role":"user","content":"a"},{"type":"reasoning","summary":[{"type":"summary_text","text":"lost"}]},
    {"role":"user","content":"b"},{"type":"reasoning","summary":[{"type":"summary_text","text":"r1"}]},
    {"type":"function_call","call_id":"c1","name":"w","arguments":"{}"},{"type":"reasoning","content":[{"type":"reasoning_text","text":"r2"}]},
    {"type":"function_call","call_id":"c2","name":"w","arguments":"{}"}],"client_metadata":{"trace":"t"},"prompt_cache_retention":"24h",
    "text":{"verbosity":"low"}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& m = r.value().chat.messages;
  ASSERT_EQ(m.size(), 3u) << m.dump();
  EXPECT_EQ(m[2]["reasoning_content"], "r1\nr2");
  EXPECT_EQ(m[2]["tool_calls"].size(), 2u);
  EXPECT_EQ(r.value().settings["text"]["verbosity"], "low");
  EXPECT_EQ(r.value().settings["text"]["format"]["type"], "text");
}

TEST(ResponsesApiParse, ErrorsNameTheResponsesApisFields) {
  auto big = parse(R"({"input":"x","max_output_tokens":1e12})");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("max_output_tokens"), std::string::npos) << big.error().message;
  auto schema = parse(R"({"input":"x","text":{"format":{"type":"json_schema","name":"n"}}})");
  ASSERT_FALSE(schema.ok());
  EXPECT_EQ(schema.error().param, "text");
  EXPECT_EQ(schema.error().message.find("response_format"), std::string::npos) << schema.error().message;
  auto effort = parse(R"({"input":"x","reasoning":{"effort":"banana"}})");
  ASSERT_FALSE(effort.ok());
  EXPECT_EQ(effort.error().param, "reasoning");
  EXPECT_NE(effort.error().message.find("'reasoning.effort'"), std::string::npos) << effort.error().message;
}

TEST(ResponsesApiParse, StringInputToolChoicesAndFormats) {
  auto r = parse(R"({"input":"hi","tools":[{"type":"function","name":"w","parameters":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}],
    "tool_choice":{"type":"function","name":"w"}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(json(r.value().chat.messages), json::parse(R"([{"role":"user","content":"hi"}])"));
  EXPECT_EQ(r.value().chat.tools.mode, tool_mode::named);
  EXPECT_EQ(r.value().chat.tools.function, "w");
  auto f = parse(R"({"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"},"strict":true},"verbosity":"low"}})");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_NE(f.value().chat.params.sampling.grammar, nullptr);
  auto o = parse(R"({"input":"hi","text":{"format":{"type":"json_object"}}})");
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_NE(o.value().chat.params.sampling.grammar, nullptr);
  auto t = parse(R"({"input":"hi","text":{"format":{"type":"text"}}})");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t.value().chat.params.sampling.grammar, nullptr);
}

TEST(ResponsesApiParse, Refusals) {
  const auto refused = [](const std::string& body, const std::string& needle) {
    auto r = parse(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().status, 400);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  refused(R"({"model":"m"})", "'input' is required");
  refused(R"({"input":[]})", "must not be empty");
  refused(R"({"input":5})", "'input'");
  refused(R"({"input":"x","previous_response_id":"resp_1"})", "stores no responses");
  refused(R"({"input":"x","conversation":"c"})", "stores no responses");
  refused(R"({"input":"x","background":true})", "background");
  refused(R"({"input":"x","truncation":"auto"})", "truncation");
  refused(R"({"input":"x","max_output_tokens":0})", "max_output_tokens");
  refused(R"({"input":"x","tools":[{"type":"web_search_preview"}]})", "function tools");
  refused(R"({"input":"x","tools":[{"type":"function","name":"w","parameters":{"type":"object"},"extra":1}]})", "'extra'");
  refused(R"({"input":"x","tool_choice":{"type":"file_search"}})", "tool_choice");
  refused(R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"http://x"}]}]})", "input_image");
  refused(R"({"input":[{"type":"item_reference","id":"x"}]})", "item_reference");
  refused(R"({"input":[{"type":"function_call","call_id":"c","name":"w"}]})", "'arguments'");
  refused(R"({"input":[{"role":"tool","content":"x"}]})", "role");
  refused(R"({"input":"x","text":{"format":{"type":"xml"}}})", "text.format.type");
  refused(R"({"input":"x","text":{"format":{"type":"json_object"}},"grammar":"root ::= \"a\""})", "give one");
  refused(R"({"input":"x","reasoning":{"effort":5}})", "reasoning.effort");
  refused(R"({"input":"x","frobnicate":1})", "'frobnicate'");
}

const ojson unit_tools = ojson::parse(
    R"([{"type":"function","function":{"name":"get_unit","parameters":{"type":"object","properties":{"unit":{"type":"string"}}}}}])");

// Events of a stream, in order.
std::vector<test::sse_event> stream_events(const reply_reading& reading, const std::string& reply, size_t piece, const job& j) {
  responses_api_stream s(reading, new_response_head("m", ojson::object()));
  std::string body = s.start();
  for (size_t at = 0; at < reply.size(); at += piece) body += s.push(reply.substr(at, piece));
  body += s.finish(j);
  return test::events_of(body);
}

json without_ids(json output) {
  for (json& item : output) {
    item.erase("id");
    item.erase("call_id");
  }
  return output;
}

// The streamed events add up (as the SDK puts them together) to the whole response's output.
void expect_stream_is_whole(const reply_reading& reading, const std::string& reply, const job& j, const std::string& status) {
  const json whole = responses_api_response(reading, new_response_head("m", ojson::object()), reply, j);
  EXPECT_EQ(whole["status"], status);
  for (size_t piece : {size_t(1), size_t(3), size_t(8), reply.size()}) {
    const auto events = stream_events(reading, reply, piece, j);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events[0].name, "response.created");
    EXPECT_EQ(events[1].name, "response.in_progress");
    json output = json::array();
    for (size_t i = 0; i < events.size(); ++i) {
      const json& e = events[i].data;
      EXPECT_EQ(e["type"], events[i].name);
      EXPECT_EQ(e["sequence_number"], i);
      if (e["type"] == "response.output_item.added") output.push_back(e["item"]);
      if (e["type"] == "response.content_part.added") output[e["output_index"].get<size_t>()]["content"].push_back(e["part"]);
      if (e["type"] == "response.output_text.delta" || e["type"] == "response.reasoning_text.delta") {
        json& part = output[e["output_index"].get<size_t>()]["content"][e["content_index"].get<size_t>()];
        part["text"] = part["text"].get<std::string>() + e["delta"].get<std::string>();
      }
      if (e["type"] == "response.function_call_arguments.delta") {
        json& item = output[e["output_index"].get<size_t>()];
        item["arguments"] = item["arguments"].get<std::string>() + e["delta"].get<std::string>();
      }
      if (e["type"] == "response.output_item.done") output[e["output_index"].get<size_t>()] = e["item"];
    }
    EXPECT_EQ(events.back().name, status == "completed" ? "response.completed" : "response.incomplete");
    EXPECT_EQ(without_ids(output), without_ids(whole["output"])) << "piece " << piece;
    EXPECT_EQ(without_ids(events.back().data["response"]["output"]), without_ids(whole["output"]));
    EXPECT_EQ(events.back().data["response"]["usage"], whole["usage"]);
  }
}

TEST(ResponsesApiOutput, ReasoningTextAndCallsAreItems) {
  job j;
  j.reason = finish_kind::stop;
  j.n_prompt = 9;
  j.n_reused = 4;
  j.n_generated = 6;
  reply_reading thinking;
  thinking.reasoning = reasoning_tags{"<think>", "</think>", "<think>"};
  thinking.options.tools = unit_tools;
  thinking.options.mode = tool_mode::automatic;
  thinking.syntax = tool_syntax::hermes;
  const std::string reply = "<think>\nhm\n</think>\n\nChecking.\n<tool_call>{\"name\": \"get_unit\", \"arguments\": {\"unit\": \"c\"}}</tool_call>";
  expect_stream_is_whole(thinking, reply, j, "completed");
  const json whole = responses_api_response(thinking, new_response_head("m", ojson::object()), reply, j);
  ASSERT_EQ(whole["output"].size(), 3u) << whole;
  EXPECT_EQ(whole["output"][0]["type"], "reasoning");
  EXPECT_EQ(whole["output"][0]["content"][0]["text"], "hm");
  EXPECT_EQ(whole["output"][1]["content"][0]["text"], "Checking.");
  EXPECT_EQ(whole["output"][2]["type"], "function_call");
  EXPECT_EQ(whole["output"][2]["name"], "get_unit");
  EXPECT_EQ(whole["output"][2]["arguments"], "{\"unit\": \"c\"}");
  EXPECT_EQ(whole["usage"]["input_tokens"], 9);
  EXPECT_EQ(whole["usage"]["input_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(whole["usage"]["total_tokens"], 15);
  // Cut by max_output_tokens: incomplete, its last item too; but whole forced arguments are a completed call.
  j.reason = finish_kind::length;
  expect_stream_is_whole(reply_reading{}, "some text", j, "incomplete");
  EXPECT_EQ(responses_api_response(reply_reading{}, new_response_head("m", ojson::object()), "some text", j)["output"][0]["status"], "incomplete");
  reply_reading named;
  named.options.tools = unit_tools;
  named.options.mode = tool_mode::named;
  named.options.function = "get_unit";
  expect_stream_is_whole(named, "{\"unit\": \"f\"}  \n", j, "completed");
  expect_stream_is_whole(named, "{\"unit\": \"f", j, "incomplete");
  EXPECT_EQ(responses_api_response(named, new_response_head("m", ojson::object()), "{\"unit\": \"f", j)["output"][0]["status"], "incomplete");
  EXPECT_EQ(responses_api_response(named, new_response_head("m", ojson::object()), "{\"unit\": \"f\"} ", j)["output"][0]["status"], "completed");
}

TEST(ResponsesApiOutput, AnErrorEvent) {
  responses_api_stream s(reply_reading{}, new_response_head("m", ojson::object()));
  std::string body = s.start();
  body += s.push("partial");
  body += s.error(api_error{500, "failed"});
  const auto events = test::events_of(body);
  ASSERT_GE(events.size(), 3u);
  // The cut item is incomplete; the error event, then response.failed (the terminal event).
  const auto& done = events[events.size() - 3];
  EXPECT_EQ(done.name, "response.output_item.done");
  EXPECT_EQ(done.data["item"]["status"], "incomplete");
  EXPECT_EQ(events[events.size() - 2].name, "error");
  EXPECT_EQ(events[events.size() - 2].data["message"], "failed");
  EXPECT_EQ(events.back().name, "response.failed");
  EXPECT_EQ(events.back().data["response"]["status"], "failed");
  EXPECT_EQ(events.back().data["response"]["error"]["message"], "failed");
  EXPECT_EQ(events.back().data["response"]["output"][0]["content"][0]["text"], "partial");
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].data["sequence_number"], i);
}

}  // namespace
}  // namespace glia::server
