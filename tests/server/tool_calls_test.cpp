// Tool calls: the syntax each real chat template writes calls in, the reading of replies written in
// it (anchored on Jinja2's own renders of the pack's templates: what a template writes for an earlier
// call is what its model was trained to write), the streaming gate, and the request fields.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <fmt/core.h>

#include "core/json_text.h"
#include "tokenizer/jinja/chat_template.h"
#include "server/request.h"
#include "server/required_call_stream.h"
#include "server/tool_calls.h"
#include "server/tool_gate.h"
#include "server/tool_request.h"
#include "test_support.h"

namespace glia::server {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// Where each pack template's assistant turn starts and ends in a render, and the syntax its calls are
// in (read from the templates by hand). Templates that write no calls or never read tools: none.
struct template_fact {
  tool_syntax syntax;
  const char* turn_start;
  std::vector<const char*> turn_ends;
  bool reads_tools;
};

const std::map<std::string, template_fact>& pack_facts() {
  static const std::map<std::string, template_fact> facts = {
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", {tool_syntax::mistral_args, "[/INST]", {"</s>"}, true}},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", {tool_syntax::hermes, "<|im_start|>assistant\n", {"<|im_end|>"}, true}},
      {"Qwen-QwQ-32B.jinja", {tool_syntax::hermes, "<|im_start|>assistant\n", {"<|im_end|>"}, true}},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", {tool_syntax::hermes, "<|im_start|>assistant\n", {"<|im_end|>"}, true}},
      {"Qwen-Qwen3-0.6B.jinja", {tool_syntax::hermes, "<|im_start|>assistant\n", {"<|im_end|>"}, true}},
      {"tokenizer_config-qwen3.jinja", {tool_syntax::hermes, "<|im_start|>assistant\n", {"<|im_end|>"}, true}},
      {"google-gemma-4-31B-it.jinja", {tool_syntax::gemma4, "<|turn>model\n", {"<|tool_response>", "<turn|>"}, true}},
      {"google-gemma-4-31B-it-interleaved.jinja", {tool_syntax::gemma4, "<|turn>model\n", {"<turn|>"}, true}},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", {tool_syntax::llama3_json, "<|start_header_id|>assistant<|end_header_id|>\n\n", {"<|eot_id|>"}, true}},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", {tool_syntax::llama3_json, "<|start_header_id|>assistant<|end_header_id|>\n\n", {"<|eot_id|>"}, true}},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", {tool_syntax::llama3_json, "<|start_header_id|>assistant<|end_header_id|>\n\n", {"<|eot_id|>"}, true}},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", {tool_syntax::mistral_list, "[/INST]", {"</s>"}, true}},
      // DeepSeek's templates write calls back but never show the model its tools.
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", {tool_syntax::none, "", {}, false}},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", {tool_syntax::none, "", {}, false}},
      {"deepseek-ai-DeepSeek-V3.1.jinja", {tool_syntax::none, "", {}, false}},
      {"google-gemma-2-2b-it.jinja", {tool_syntax::none, "", {}, false}},
      {"meta-llama-Llama-2-13b-chat-hf.jinja", {tool_syntax::none, "", {}, false}},
      {"microsoft-Phi-3.5-mini-instruct.jinja", {tool_syntax::none, "", {}, false}},
      {"tokenizer_config-gemma3.jinja", {tool_syntax::none, "", {}, false}},
      {"tokenizer_config-llama3.jinja", {tool_syntax::none, "", {}, false}},
  };
  return facts;
}

TEST(ToolSyntax, OfEveryPackTemplate) {
  size_t seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::testdata("chat_templates/templates"))) {
    const std::string name = e.path().filename().string();
    auto it = pack_facts().find(name);
    ASSERT_NE(it, pack_facts().end()) << "a template the test does not know: " << name;
    const std::string source = test::read_text(e.path().string());
    EXPECT_EQ(tool_syntax_of(source), it->second.syntax) << name;
    EXPECT_EQ(template_reads_tools(source), it->second.reads_tools) << name;
    ++seen;
  }
  EXPECT_EQ(seen, pack_facts().size());
}

// Jinja2's renders of the pack templates (tests/template/diff_expected.json, by gen_expected.py).
const ojson& reference_renders() {
  static const ojson doc = [] {
    const auto path = std::filesystem::path(__FILE__).parent_path().parent_path() / "template" / "diff_expected.json";
    return ojson::parse(test::read_text(path.string()));
  }();
  return doc;
}

// The assistant turn that answers `user_text` in a render: what the model wrote, calls included.
std::string assistant_turn(const std::string& render, const template_fact& f, const std::string& user_text) {
  const size_t user = render.find(user_text);
  if (user == std::string::npos) return {};
  const size_t start = render.find(f.turn_start, user);
  if (start == std::string::npos) return {};
  const size_t from = start + std::string_view(f.turn_start).size();
  size_t end = std::string::npos;
  for (const char* e : f.turn_ends) end = std::min(end, render.find(e, from));
  return end == std::string::npos ? std::string() : render.substr(from, end - from);
}

struct written_call {
  std::string name;
  json arguments;
};

// The calls of the conversation's first assistant turn with calls, and the user text before it.
std::vector<written_call> conversation_calls(const std::string& conversation, std::string& user_text) {
  for (const ojson& c : reference_renders()["conversations"]) {
    if (c["name"] != conversation) continue;
    std::vector<written_call> out;
    for (const ojson& m : c["messages"]) {
      if (m["role"] == "user" && m["content"].is_string()) user_text = m["content"].get<std::string>();
      if (!m.contains("tool_calls")) continue;
      for (const ojson& tc : m["tool_calls"]) {
        const ojson& args = tc["function"]["arguments"];
        out.push_back({tc["function"]["name"].get<std::string>(),
                       args.is_string() ? json::parse(args.get<std::string>()) : json::parse(args.dump())});
      }
      return out;
    }
  }
  return {};
}

TEST(ToolReply, ReadsTheCallsEachTemplateWrites) {
  size_t checked = 0;
  for (const ojson& t : reference_renders()["pack_templates"]) {
    const std::string file = std::filesystem::path(t["template"].get<std::string>()).filename().string();
    const template_fact& f = pack_facts().at(file);
    if (f.syntax == tool_syntax::none) continue;
    for (const ojson& r : t["renders"]) {
      const std::string conv = r["conversation"].get<std::string>();
      if (r["add_generation_prompt"].get<bool>() || !r.contains("output")) continue;
      std::string user_text;
      const auto expected = conversation_calls(conv, user_text);
      if (expected.empty()) continue;
      const std::string turn = assistant_turn(r["output"].get<std::string>(), f, user_text);
      ASSERT_FALSE(turn.empty()) << file << " " << conv;
      const parsed_reply reply = parse_tool_reply(f.syntax, turn);
      ASSERT_EQ(reply.calls.size(), expected.size()) << file << " " << conv << ": " << turn;
      EXPECT_EQ(reply.content, "") << file << " " << conv;
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(reply.calls[i].name, expected[i].name) << file;
        EXPECT_EQ(json::parse(reply.calls[i].arguments), expected[i].arguments) << file << " " << conv;
        EXPECT_FALSE(reply.calls[i].id.empty());
      }
      ++checked;
    }
  }
  // Every template with a syntax, on the single call and (but Llama 3's, which allow one call) the pair.
  EXPECT_GE(checked, 20u);
}

TEST(ToolReply, ContentBeforeCallsAndWhatIsNotACall) {
  auto r = parse_tool_reply(tool_syntax::hermes, "Let me look.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "Let me look.");
  EXPECT_EQ(r.calls[0].arguments, R"({"a": 1})");  // as written
  // The last call may lack its close (the end token came first); arguments given as JSON text.
  r = parse_tool_reply(tool_syntax::hermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"b\\\": [1, 2]}\"}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"b": [1, 2]})");
  // The arguments are the model's text: member order, numbers as written (not re-printed: a big
  // integer stays exact, 0.10 stays 0.10), and of duplicate members nlohmann's choice, the last.
  r = parse_tool_reply(tool_syntax::hermes,
                       R"(<tool_call>{"name": "f", "arguments": {"z": 1, "n": 123456789012345678901234, "x": 0.10, "e": 1e2}}</tool_call>)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"z": 1, "n": 123456789012345678901234, "x": 0.10, "e": 1e2})");
  r = parse_tool_reply(tool_syntax::hermes, R"(<tool_call>{"arguments": {"a": 1}, "name": "f", "arguments" : {"b": 2}}</tool_call>)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"b": 2})");
  // A number no double holds is JSON all the same (a grammar lets a model write it; nlohmann alone
  // would refuse the text).
  r = parse_tool_reply(tool_syntax::hermes, R"(<tool_call>{"name": "f", "arguments": {"big": -1.37722E337, "x": [1e400]}}</tool_call>)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"big": -1.37722E337, "x": [1e400]})");
  auto forced = parse_required_calls(tool_syntax::hermes, R"([{"name": "f", "parameters": {"n": 9e999}}])");
  ASSERT_TRUE(forced.has_value());
  EXPECT_EQ(forced->at(0).arguments, R"({"n": 9e999})");
  r = parse_tool_reply(tool_syntax::gemma4, "<|tool_call>call:f{n:1e400}<tool_call|>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"n":1e400})");
  r = parse_tool_reply(tool_syntax::mistral_list, R"([TOOL_CALLS][{"name": "f", "arguments": {"t": true}}, {"name": "g", "arguments": "{\"s\": \"[x]\"}"}])");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, R"({"t": true})");
  EXPECT_EQ(r.calls[1].arguments, R"({"s": "[x]"})");
  // Not calls: the reply is content, whole.
  for (const char* text : {"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1</tool_call>",  // cut JSON
                           "<tool_call>{\"arguments\": {}}</tool_call>",                       // no name
                           "<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>",          // empty name
                           "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",        // arguments not an object
                           "<tool_call>{\"name\": \"f\"} trailing words",                       // junk after an unclosed call
                           "I would write <tool_call> here",                                     // a mention
                           "no calls at all"}) {
    r = parse_tool_reply(tool_syntax::hermes, text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
  // Reasoning may mention the marker; the calls come after it.
  r = parse_tool_reply(tool_syntax::hermes, "<think>\nUse <tool_call> tags.\n</think>\n\n<tool_call>\n{\"name\": \"f\"}\n</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "<think>\nUse <tool_call> tags.\n</think>");
  EXPECT_TRUE(parse_tool_reply(tool_syntax::hermes, "<think>cut short <tool_call>{\"name\": \"f\"}</tool_call>").calls.empty());
  // A call without arguments has an empty object.
  r = parse_tool_reply(tool_syntax::hermes, R"(<tool_call>{"name": "now"}</tool_call>)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, "{}");
}

TEST(ToolReply, Llama3Json) {
  auto r = parse_tool_reply(tool_syntax::llama3_json, "  {\"name\": \"f\", \"parameters\": {\"x\": \"y\"}}; {\"type\": \"function\", \"name\": \"g\", \"parameters\": {}}");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].name, "g");
  r = parse_tool_reply(tool_syntax::llama3_json, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"q\": 1}}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"q": 1})");
  for (const char* text : {"The answer is {\"name\": \"f\", \"parameters\": {}}", "{\"answer\": 4}",
                           "{\"name\": \"f\", \"parameters\": {}} and then words", "<|python_tag|>brave_search.call(query=\"x\")"}) {
    r = parse_tool_reply(tool_syntax::llama3_json, text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolReply, MistralAndGemma4) {
  auto r = parse_tool_reply(tool_syntax::mistral_list, R"(Checking. [TOOL_CALLS] [{"name": "f", "arguments": {"a": true}, "id": "abcdefghi"}])");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "Checking.");
  EXPECT_EQ(r.calls[0].id.size(), 9u);  // Mistral's templates refuse any other length
  r = parse_tool_reply(tool_syntax::mistral_args, R"([TOOL_CALLS]f[ARGS]{"a": 1}[TOOL_CALLS]g[CALL_ID]x1[ARGS]{})");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].name, "g");
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_TRUE(parse_tool_reply(tool_syntax::mistral_args, "[TOOL_CALLS]f{\"a\": 1}").calls.empty());
  EXPECT_TRUE(parse_tool_reply(tool_syntax::mistral_list, "[TOOL_CALLS][]").calls.empty());
  // Gemma 4's notation: every kind of value.
  r = parse_tool_reply(tool_syntax::gemma4,
                       R"(<|tool_call>call:plan{when:<|"|>today, 9:00<|"|>,n:-2.5e1,ok:true,no:false,none:None,)"
                       R"(list:[1,<|"|>a<|"|>,[]],obj:{<|"|>k k<|"|>:{}}}<tool_call|>)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(json::parse(r.calls[0].arguments),
            json::parse(R"({"when":"today, 9:00","n":-25.0,"ok":true,"no":false,"none":null,"list":[1,"a",[]],"obj":{"k k":{}}})"));
  EXPECT_NE(r.calls[0].arguments.find(R"("n":-2.5e1)"), std::string::npos) << r.calls[0].arguments;  // the model's digits
  for (const char* text : {"<|tool_call>call:f{a:<|\"|>open}<tool_call|>", "<|tool_call>call:f{a:01x}<tool_call|>",
                           "<|tool_call>f{}<tool_call|>", "<|tool_call>call:f{a:1,}<tool_call|>"})
    EXPECT_TRUE(parse_tool_reply(tool_syntax::gemma4, text).calls.empty()) << text;
  // A reply in a syntax with no calls is content.
  EXPECT_EQ(parse_tool_reply(tool_syntax::none, "<tool_call>{\"name\": \"f\"}</tool_call>").calls.size(), 0u);
}

// Found in review: what a hostile or unlucky reply must not do.
TEST(ToolReply, EdgesFromReview) {
  // Nested past any real call: content, not a crash (nlohmann prints recursively).
  const std::string deep = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(60000, '[') + std::string(60000, ']') + "}}</tool_call>";
  EXPECT_TRUE(parse_tool_reply(tool_syntax::hermes, deep).calls.empty());
  tool_options o;
  // Llama 3's bare JSON needs its arguments: an answer with a "name" is content.
  EXPECT_TRUE(parse_tool_reply(tool_syntax::llama3_json, R"({"name": "Bob", "age": 3})").calls.empty());
  // Mistral's [ARGS] form keeps its calls when text follows them.
  EXPECT_EQ(parse_tool_reply(tool_syntax::mistral_args, R"([TOOL_CALLS]f[ARGS]{"a": 1} done)").calls.size(), 1u);
  // A template that opened the reasoning (QwQ): the reply has only </think>, and calls come after it.
  auto r = parse_tool_reply(tool_syntax::hermes, "I will use <tool_call> tags.\n</think>\n\n<tool_call>{\"name\": \"f\"}</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "I will use <tool_call> tags.\n</think>");
  // Null or empty arguments are none.
  for (const char* args : {"null", "\"\"", "\" \""}) {
    r = parse_tool_reply(tool_syntax::hermes, std::string(R"(<tool_call>{"name": "f", "arguments": )") + args + "}</tool_call>");
    ASSERT_EQ(r.calls.size(), 1u) << args;
    EXPECT_EQ(r.calls[0].arguments, "{}");
  }
  // In automatic mode a call to a function the request does not have is content.
  o.mode = tool_mode::automatic;
  o.tools = ojson::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  EXPECT_EQ(read_tool_reply(o, tool_syntax::hermes, R"(<tool_call>{"name": "f"}</tool_call>)").calls.size(), 1u);
  r = read_tool_reply(o, tool_syntax::hermes, R"(<tool_call>{"name": "g"}</tool_call>)");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, R"(<tool_call>{"name": "g"}</tool_call>)");
}

TEST(ToolSyntax, XmlInsideToolCallTagsIsNotHermes) {
  // Qwen3-Coder's and GLM-4.5's templates put XML, not JSON, inside <tool_call>.
  EXPECT_EQ(tool_syntax_of("{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}"), tool_syntax::none);
  EXPECT_EQ(tool_syntax_of("<tool_call>{{ tc.name }}\n<arg_key>{{ k }}</arg_key>"), tool_syntax::none);
  EXPECT_EQ(tool_syntax_of("<tool_call>\n{{ tc | tojson }}\n</tool_call>"), tool_syntax::hermes);
}

TEST(ToolReply, NewIds) {
  const std::string a = new_tool_call_id(tool_syntax::hermes), b = new_tool_call_id(tool_syntax::hermes);
  EXPECT_EQ(a.size(), 29u);
  EXPECT_TRUE(a.starts_with("call_"));
  EXPECT_NE(a, b);
  const std::string m = new_tool_call_id(tool_syntax::mistral_args);
  EXPECT_EQ(m.size(), 9u);
  EXPECT_EQ(m.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), std::string::npos);
}

// Streamed in pieces of every small size, a reply gives the same content as when read whole, and no
// byte of the calls' syntax goes out as content.
TEST(ToolGate, StreamedContentIsTheWholeReplysContent) {
  const std::vector<std::pair<tool_syntax, std::string>> replies = {
      {tool_syntax::hermes, "Sure.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"},
      {tool_syntax::hermes, "No call, but a < and <tool and <tool_cal then text \n"},
      {tool_syntax::hermes, "Broken <tool_call>{\"name\": 1}</tool_call> tail"},
      {tool_syntax::hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"g\"}</tool_call>"},
      {tool_syntax::llama3_json, "\n {\"name\": \"f\", \"parameters\": {\"x\": 1}}"},
      {tool_syntax::llama3_json, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}"},
      {tool_syntax::llama3_json, "  <|pyth is not a tag {\"name\": \"f\", \"parameters\": {}}"},
      {tool_syntax::llama3_json, "Plain answer.  "},
      {tool_syntax::mistral_list, "Text [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]"},
      {tool_syntax::mistral_args, "[TOOL_CALLS]f[ARGS]{\"a\": \"[TOOL_CALLS]\"}"},
      {tool_syntax::gemma4, "Ok <|tool_call>call:f{a:<|\"|>x<|\"|>}<tool_call|>"},
      {tool_syntax::gemma4, "Ends in a marker start <|tool_ca"},
      {tool_syntax::hermes, "<think>\nI could write <tool_call> here.\n</think>\n\n<tool_call>{\"name\": \"f\"}</tool_call>"},
      {tool_syntax::hermes, "<think>unfinished <tool_call>{\"name\": \"f\"}</tool_call>"},
      {tool_syntax::hermes, "</think> stray close, then <tool_call>{\"name\": \"f\"}</tool_call>"},
      {tool_syntax::hermes, "Opened by the prompt: I use <tool_call> tags.\n</think>\n\nOk. <tool_call>{\"name\": \"f\"}</tool_call>"},
      {tool_syntax::mistral_args, "<think>[TOOL_CALLS]no</think>[TOOL_CALLS]f[ARGS]{} and text"},
  };
  for (const auto& [syntax, reply] : replies) {
    const parsed_reply whole = parse_tool_reply(syntax, reply);
    for (size_t piece = 1; piece <= 4; ++piece) {
      tool_reply_gate gate(syntax);
      std::string streamed;
      for (size_t i = 0; i < reply.size(); i += piece) streamed += gate.push(std::string_view(reply).substr(i, piece));
      EXPECT_EQ(gate.text(), reply);
      // What went out early is the content's start (all of it, but where a prompt-opened reasoning
      // mentioned a marker and the gate held from there).
      EXPECT_TRUE(whole.content.starts_with(streamed)) << reply << " in pieces of " << piece;
      streamed += gate.finish(whole);
      EXPECT_EQ(streamed, whole.content) << reply << " in pieces of " << piece;
    }
  }
}

// A "required" reply streams call by call: each opens once its name is whole, and its pieces of
// arguments add up to what the whole reply's reading returns, at every piece size.
TEST(RequiredCallStream, PiecesAddUpToTheWholeReading) {
  const std::vector<std::string> replies = {
      R"([{"name": "f", "parameters": {"a": 1, "b": {"c": [1, {"d": "}]\"{"}]}}}])",
      R"([ {"name":"get_weather","parameters":{}} , {"name": "g", "parameters": { "x" : "y" } } ])",
      R"([{"parameters": {"late": "name"}, "name": "h"}])",
      R"([{"name": "a\\b\u0063", "parameters": {}}])",
      "[\n  {\n    \"name\": \"f\",\n    \"parameters\": {\n      \"s\": \"\\\\\\\"\"\n    }\n  }\n]",
  };
  for (const std::string& reply : replies) {
    const auto whole = parse_required_calls(tool_syntax::hermes, reply);
    ASSERT_TRUE(whole) << reply;
    for (size_t piece = 1; piece <= 5; ++piece) {
      required_call_stream stream(SIZE_MAX);
      std::vector<std::string> names, arguments;
      for (size_t i = 0; i < reply.size(); i += piece)
        for (const call_piece& p : stream.push(std::string_view(reply).substr(i, piece))) {
          if (p.name) {
            ASSERT_EQ(p.index, names.size()) << reply;
            names.push_back(*p.name);
            arguments.emplace_back();
          }
          ASSERT_LT(p.index, names.size()) << reply << ": arguments before their call opened";
          arguments[p.index] += p.arguments;
        }
      EXPECT_EQ(stream.text(), reply);
      ASSERT_EQ(names.size(), whole->size()) << reply << " in pieces of " << piece;
      for (size_t k = 0; k < names.size(); ++k) {
        EXPECT_EQ(names[k], (*whole)[k].name) << reply;
        EXPECT_EQ(arguments[k], (*whole)[k].arguments) << reply << " in pieces of " << piece;
      }
    }
  }
  // Without parallel calls, one opens (as the whole reading keeps one); a cut reply streams what came.
  required_call_stream one(1);
  size_t opened = 0;
  for (const call_piece& p : one.push(R"([{"name": "f", "parameters": {}}, {"name": "g", "parameters": {"x": 1}}])")) {
    opened += p.name.has_value();
    EXPECT_EQ(p.index, 0u);
  }
  EXPECT_EQ(opened, 1u);
  required_call_stream cut(SIZE_MAX);
  const auto pieces = cut.push(R"([{"name": "f", "parameters": {"a": "be)");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(*pieces[0].name, "f");
  EXPECT_EQ(pieces[0].arguments, R"({"a": "be)");
  EXPECT_TRUE(required_call_stream(SIZE_MAX).push(R"([{"name": "f)").empty());
}

const sampler_params no_defaults{};

api_result<completion_request> chat_with_tools(const std::string& body) { return parse_chat_request(body, no_defaults); }

const std::string weather_tool =
    R"({"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"unit":{"enum":["c","f"]},"city":{"type":"string"}},"required":["city"]}}})";

TEST(ToolRequest, ToolsAndChoices) {
  auto r = chat_with_tools(R"({"messages":[{"role":"user","content":"x"}],"tools":[)" + weather_tool + "]}");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().tools.mode, tool_mode::automatic);
  EXPECT_FALSE(r.value().params.sampling.grammar);
  // The definitions keep the client's member order (templates print them).
  EXPECT_EQ(r.value().tools.tools[0]["function"]["parameters"]["properties"].begin().key(), "unit");
  r = chat_with_tools(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required","parallel_tool_calls":false,"tools":[)" + weather_tool + "]}");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().tools.mode, tool_mode::required);
  EXPECT_FALSE(r.value().tools.parallel);
  EXPECT_TRUE(r.value().params.sampling.grammar);
  r = chat_with_tools(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"tools":[)" + weather_tool + "]}");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().tools.mode, tool_mode::named);
  EXPECT_EQ(r.value().tools.function, "get_weather");
  r = chat_with_tools(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"none","tools":[)" + weather_tool + "]}");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().tools.mode, tool_mode::none);
  EXPECT_FALSE(r.value().tools.tools.is_null());  // the template still sees them
  // What SDKs send when there are no tools.
  for (const char* none : {R"("tools":[])", R"("tools":[],"tool_choice":"auto")", R"("tools":null,"tool_choice":null)", R"("tool_choice":"none")", R"("parallel_tool_calls":true)"}) {
    r = chat_with_tools(std::string(R"({"messages":[{"role":"user","content":"x"}],)") + none + "}");
    ASSERT_TRUE(r.ok()) << none << ": " << r.error().message;
    EXPECT_EQ(r.value().tools.mode, tool_mode::none);
  }
}

TEST(ToolRequest, RefusesMalformedTools) {
  const std::string m = R"({"messages":[{"role":"user","content":"x"}],)";
  const std::vector<std::string> bad = {
      R"("tools":{})",
      R"("tools":[1])",
      R"("tools":[{"type":"function"}])",
      R"("tools":[{"type":"retrieval","function":{"name":"f"}}])",
      R"("tools":[{"type":"function","function":{"name":""}}])",
      R"("tools":[{"type":"function","function":{"name":"two words"}}])",
      R"("tools":[{"type":"function","function":{"name":"f{"}}])",
      R"("tools":[{"type":"function","function":{"name":7}}])",
      R"("tools":[{"type":"function","function":{"name":"f","parameters":"{}"}}])",
      R"("tools":[{"type":"function","function":{"name":"f","description":1}}])",
      R"("tools":[{"type":"function","function":{"name":"f","strict":"yes"}}])",
      R"("tools":[{"type":"function","function":{"name":"f","bogus":1}}])",
      R"("tools":[{"type":"function","function":{"name":"f"},"extra":1}])",
      R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])",
      R"("tool_choice":"auto")",
      R"("tool_choice":"required")",
      R"("tool_choice":"sometimes","tools":[)" + weather_tool + "]",
      R"("tool_choice":{"type":"function","function":{"name":"other"}},"tools":[)" + weather_tool + "]",
      R"("tool_choice":{"type":"function"},"tools":[)" + weather_tool + "]",
      R"("tool_choice":"required","response_format":{"type":"json_object"},"tools":[)" + weather_tool + "]",
      R"("grammar":"root ::= \"a\"","tools":[)" + weather_tool + "]",
      R"("parallel_tool_calls":"no","tools":[)" + weather_tool + "]",
      R"("tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"integer","multipleOf":7}}}])",
      R"("functions":[{"name":"f"}])",
      R"("function_call":"auto")",
  };
  for (const std::string& b : bad) {
    auto r = chat_with_tools(m + b + "}");
    ASSERT_FALSE(r.ok()) << "accepted: " << b;
    EXPECT_EQ(r.error().status, 400);
  }
  // Tools belong to chat.
  EXPECT_FALSE(parse_completion_request(R"({"prompt":"x","tools":[)" + weather_tool + "]}", no_defaults).ok());
}

TEST(ToolRequest, MessagesWithCallsAndResults) {
  auto r = chat_with_tools(R"({"messages":[{"role":"user","content":"Weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"z\": 1, \"a\": \"b\"}"}},
                                                       {"id":"call_2","type":"function","function":{"name":"now","arguments":"not json"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"21"},
      {"role":"tool","tool_call_id":"call_2","name":"now","content":[{"type":"text","text":"9:00"}]}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ojson& msgs = r.value().messages;
  EXPECT_EQ(msgs[1]["content"], "");  // as vLLM gives templates a call without text
  // Arguments as an object, in the client's order; text that is not JSON stays text.
  EXPECT_EQ(msgs[1]["tool_calls"][0]["function"]["arguments"].dump(), R"({"z":1,"a":"b"})");
  EXPECT_EQ(msgs[1]["tool_calls"][1]["function"]["arguments"], "not json");
  EXPECT_EQ(msgs[1]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(msgs[2]["role"], "tool");
  EXPECT_EQ(msgs[2]["tool_call_id"], "call_1");
  EXPECT_EQ(msgs[3]["content"], "9:00");
  const std::string m = R"({"messages":[{"role":"user","content":"x"},)";
  for (const char* b : {R"({"role":"tool","content":"x"})",
                        R"({"role":"tool","tool_call_id":5,"content":"x"})",
                        R"({"role":"tool","tool_call_id":"c"})",
                        R"({"role":"user","content":"x","tool_call_id":"c"})",
                        R"({"role":"user","content":"x","tool_calls":[{"function":{"name":"f"}}]})",
                        R"({"role":"assistant","tool_calls":{}})",
                        R"({"role":"assistant","tool_calls":[{"type":"function"}]})",
                        R"({"role":"assistant","tool_calls":[{"type":"code","function":{"name":"f"}}]})",
                        R"({"role":"assistant","tool_calls":[{"id":1,"function":{"name":"f"}}]})",
                        R"({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":[1]}}]})",
                        R"({"role":"function","name":"f","content":"x"})"}) {
    auto bad = chat_with_tools(m + b + "]}");
    EXPECT_FALSE(bad.ok()) << "accepted: " << b;
  }
}

TEST(ToolRequest, EdgesFromReview) {
  // Pydantic's schemas refer to their own $defs: they still resolve inside the forced choice's schema.
  const std::string defs_tool =
      R"({"type":"function","function":{"name":"set_unit","parameters":{"$defs":{"U":{"enum":["c","f"]}},"properties":{"unit":{"$ref":"#/$defs/U"}},"required":["unit"]}}})";
  for (const char* choice : {R"("required")", R"({"type":"function","function":{"name":"set_unit"}})"}) {
    auto r = chat_with_tools(std::string(R"({"messages":[{"role":"user","content":"x"}],"tool_choice":)") + choice + R"(,"tools":[)" +
                             weather_tool + "," + defs_tool + "]}");
    EXPECT_TRUE(r.ok()) << choice << ": " << r.error().message;
  }
  // Parameters are an object's; a schema of another type is refused.
  EXPECT_FALSE(chat_with_tools(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}]})").ok());
  // An arguments text nested past any real call stays text (the template prints values recursively).
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  auto r = chat_with_tools(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":")" +
                           deep + R"("}}]}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().messages[1]["tool_calls"][0]["function"]["arguments"].is_string());
  EXPECT_FALSE(ordered_json_text(r.value().messages).empty());
  // Empty arguments are none.
  r = chat_with_tools(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().messages[1]["tool_calls"][0]["function"]["arguments"], ojson::object());
  // Tool calls are read from a reply's start, which a continued message is not.
  EXPECT_FALSE(chat_with_tools(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure"}],"continue_final_message":true,"tools":[)" +
                               weather_tool + "]}").ok());
  EXPECT_TRUE(chat_with_tools(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure"}],"continue_final_message":true,"tool_choice":"none","tools":[)" +
                              weather_tool + "]}").ok());
  // "required" lists each tool as one alternative of its constraint, which caps them at 128.
  std::string many = R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required","tools":[)";
  for (int i = 0; i < 129; ++i) many += fmt::format(R"({}{{"type":"function","function":{{"name":"f{}"}}}})", i ? "," : "", i);
  auto refused = chat_with_tools(many + "]}");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("at most 128 tools"), std::string::npos) << refused.error().message;
  // A message with calls cannot be continued (the continuation would cut them off).
  EXPECT_FALSE(chat_with_tools(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"Sure","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}],"continue_final_message":true})").ok());
}

// Mistral's templates refuse ids that are not 9 letters or digits; OpenAI's ids are fitted to them.
TEST(ToolRequest, CallIdsFitMistralTemplates) {
  const std::string nemo = test::read_text(test::testdata("chat_templates/templates/mistralai-Mistral-Nemo-Instruct-2407.jinja"));
  auto r = chat_with_tools(R"({"messages":[{"role":"user","content":"x"},
      {"role":"assistant","tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"f","arguments":"{}"}},
                                        {"id":"abcdefgh9","type":"function","function":{"name":"g","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"call_abc123","content":"1"},{"role":"tool","tool_call_id":"abcdefgh9","content":"2"}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  jinja::chat_inputs in;
  in.tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  in.messages = r.value().messages;
  auto as_sent = jinja::render_chat(nemo, in);
  ASSERT_FALSE(as_sent.is_ok());
  EXPECT_NE(as_sent.message().find("length 9"), std::string::npos) << as_sent.message();
  ojson fitted = r.value().messages;
  fit_call_ids(tool_syntax_of(nemo), fitted);
  const std::string id = fitted[1]["tool_calls"][0]["id"].get<std::string>();
  EXPECT_EQ(id.size(), 9u);
  EXPECT_EQ(fitted[2]["tool_call_id"], id);                 // the result still names its call
  EXPECT_EQ(fitted[1]["tool_calls"][1]["id"], "abcdefgh9");  // already fit: kept
  in.messages = fitted;
  auto rendered = jinja::render_chat(nemo, in);
  ASSERT_TRUE(rendered.is_ok()) << rendered.message();
  EXPECT_NE(rendered->find("\"id\": \"" + id + "\""), std::string::npos) << *rendered;
  // Other syntaxes keep the ids as sent.
  ojson kept = r.value().messages;
  fit_call_ids(tool_syntax::hermes, kept);
  EXPECT_EQ(kept, r.value().messages);
}

TEST(ToolRequest, ForcedRepliesAreRead) {
  tool_options o;
  o.mode = tool_mode::named;
  o.function = "get_weather";
  auto r = read_tool_reply(o, tool_syntax::hermes, R"({"city": "Oslo"})");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city": "Oslo"})");  // the text as generated
  EXPECT_EQ(r.content, "");
  // Cut by max_tokens: still the call, with what came (finish_reason says length), as OpenAI and vLLM.
  r = read_tool_reply(o, tool_syntax::hermes, R"({"city": "Os)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city": "Os)");
  EXPECT_EQ(r.content, "");
  o.mode = tool_mode::required;
  r = read_tool_reply(o, tool_syntax::mistral_list, R"([{"name": "a", "parameters": {}}, {"name": "b", "parameters": {"x": 1}}])");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].arguments, R"({"x": 1})");
  EXPECT_EQ(r.calls[0].id.size(), 9u);
  o.parallel = false;
  EXPECT_EQ(read_tool_reply(o, tool_syntax::hermes, R"([{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}])").calls.size(), 1u);
  EXPECT_TRUE(read_tool_reply(o, tool_syntax::hermes, "[]").calls.empty());
  o.mode = tool_mode::none;
  EXPECT_TRUE(read_tool_reply(o, tool_syntax::hermes, R"(<tool_call>{"name": "f"}</tool_call>)").calls.empty());
}

}  // namespace
}  // namespace glia::server
