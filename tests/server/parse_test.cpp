// Unit tests of the server's pieces that need no model: request parsing and validation, UTF-8
// checking, stop-string holding, the API-key compare, SSE framing and the metrics text.
#include <gtest/gtest.h>

#include <filesystem>

#include "server/auth.h"
#include "server/chat_prefill.h"
#include "server/metrics.h"
#include "server/model_name.h"
#include "server/request.h"
#include "server/sse.h"
#include "runtime/stop_filter.h"
#include "server/utf8_check.h"

namespace glia::server {
namespace {

const sampler_params defaults{};

api_result<completion_request> chat(const std::string& body) { return parse_chat_request(body, defaults); }
api_result<completion_request> completion(const std::string& body) { return parse_completion_request(body, defaults); }

TEST(ServerParse, ChatMinimal) {
  auto r = chat(R"({"model":"x","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r.value().chat);
  EXPECT_EQ(r.value().messages.size(), 1u);
  EXPECT_EQ(r.value().params.max_tokens, -1);
  EXPECT_FALSE(r.value().params.stream);
}

TEST(ServerParse, ChatAllFields) {
  auto r = chat(R"({"messages":[{"role":"developer","content":"be brief"},
    {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
    {"role":"assistant","content":null}],
    "max_completion_tokens":7,"temperature":0,"top_p":0.5,"top_k":3,"min_p":0.1,"seed":-5,
    "stop":["x","y"],"presence_penalty":1.5,"frequency_penalty":-1,"logit_bias":{"12":-100,"7":3.5},
    "logprobs":true,"top_logprobs":3,"n":1,"stream":true,"stream_options":{"include_usage":true},
    "user":"u","response_format":{"type":"text"},"ignore_eos":true})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& p = r.value().params;
  EXPECT_EQ(r.value().messages[0]["role"], "system");
  EXPECT_EQ(r.value().messages[1]["content"], "a\nb");  // parts joined with newlines, as vLLM and llama-server
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_EQ(p.sampling.temperature, 0.0f);
  EXPECT_EQ(p.sampling.top_k, 3);
  EXPECT_TRUE(p.seed_given);
  EXPECT_EQ(p.stop.size(), 2u);
  EXPECT_EQ(p.sampling.logit_bias.at(12), -100.0f);
  EXPECT_TRUE(p.logprobs);
  EXPECT_EQ(p.top_logprobs, 3);
  EXPECT_TRUE(p.stream);
  EXPECT_TRUE(p.include_usage);
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_FALSE(chat(R"({"messages":[{"role":"user","content":"x"}]})").value().params.ignore_eos);
}

// Constrained output in each server's spelling; what asks for nothing (response_format text,
// llama-server's empty grammar) is no constraint and may sit beside one.
TEST(ServerParse, OutputConstraintSpellings) {
  const std::string m = R"("messages":[{"role":"user","content":"x"}])";
  auto constrained = [&](const std::string& extra) {
    auto r = chat("{" + m + "," + extra + "}");
    EXPECT_TRUE(r.ok()) << extra << ": " << (r.ok() ? "" : r.error().message);
    return r.ok() && r.value().params.sampling.grammar != nullptr;
  };
  EXPECT_TRUE(constrained(R"("response_format":{"type":"json_object"})"));
  EXPECT_TRUE(constrained(R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"integer"}}})"));
  EXPECT_TRUE(constrained(R"("grammar":"root ::= \"a\"")"));
  EXPECT_TRUE(constrained(R"("json_schema":{"type":"boolean"})"));
  EXPECT_TRUE(constrained(R"("guided_json":"{\"type\":\"null\"}")"));
  EXPECT_TRUE(constrained(R"("guided_regex":"[0-9]+")"));
  EXPECT_TRUE(constrained(R"("guided_choice":["yes","no"],"guided_decoding_backend":"xgrammar")"));
  EXPECT_TRUE(constrained(R"("guided_grammar":"root ::= [a-z]+")"));
  EXPECT_TRUE(constrained(R"("structured_outputs":{"choice":["a","b"]})"));
  EXPECT_TRUE(constrained(R"("structured_outputs":{"json":{"type":"object"}})"));
  EXPECT_TRUE(constrained(R"("response_format":{"type":"text"},"grammar":"root ::= \"a\"")"));
  EXPECT_FALSE(constrained(R"("grammar":"")"));
  EXPECT_FALSE(constrained(R"("response_format":{"type":"text"})"));
  EXPECT_FALSE(chat("{" + m + R"(,"structured_outputs":{"regex":"a","choice":["a"]}})").ok());
  EXPECT_FALSE(chat("{" + m + R"(,"structured_outputs":{"whitespace_pattern":" "}})").ok());
}

// vLLM's and llama-server's chat extras: template variables (Qwen3's enable_thinking), the
// generation prompt switch, and transformers' name for the repeat penalty.
TEST(ServerParse, ChatTemplateKwargsAndRepetitionPenalty) {
  auto r = chat(R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":false},
    "add_generation_prompt":false,"repetition_penalty":1.1})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().template_kwargs, nlohmann::json({{"enable_thinking", false}}));
  EXPECT_FALSE(r.value().add_generation_prompt);
  EXPECT_FLOAT_EQ(r.value().params.sampling.repeat_penalty, 1.1f);
  auto plain = chat(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain.value().add_generation_prompt);
  EXPECT_TRUE(plain.value().template_kwargs.empty());
  for (const char* bad : {R"("chat_template_kwargs":[1])", R"("chat_template_kwargs":{"messages":[]})",
                          R"("repeat_penalty":1.1,"repetition_penalty":1.2)", R"("repetition_penalty":0)",
                          R"("add_generation_prompt":"yes")"}) {
    auto e = chat(std::string(R"({"messages":[{"role":"user","content":"hi"}],)") + bad + "}");
    EXPECT_FALSE(e.ok()) << bad;
  }
  // A prefill: the reply continues the last assistant message (then no generation prompt, as vLLM).
  auto prefill = chat(R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure,"}],"continue_final_message":true})");
  ASSERT_TRUE(prefill.ok()) << prefill.error().message;
  EXPECT_TRUE(prefill.value().continue_final_message);
  EXPECT_FALSE(prefill.value().add_generation_prompt);
  EXPECT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi"}],"continue_final_message":true})").ok());
  EXPECT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a"}],
    "continue_final_message":true,"add_generation_prompt":true})").ok());
  // An assistant turn's reasoning passes to the template.
  auto reasoning = chat(R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","reasoning_content":"think"}]})");
  ASSERT_TRUE(reasoning.ok()) << reasoning.error().message;
  EXPECT_EQ(reasoning.value().messages[1]["reasoning_content"], "think");
  EXPECT_FALSE(chat(R"({"messages":[{"role":"user","content":"hi","reasoning_content":"x"}]})").ok());
  EXPECT_FALSE(chat(R"({"messages":[{"role":"assistant","content":"hi","reasoning_content":1}]})").ok());
  // Completions have no template.
  EXPECT_FALSE(completion(R"({"prompt":"x","chat_template_kwargs":{}})").ok());
}

// A participant name reaches the template's message (templates that use message.name see it); a
// name that is not a string is refused.
// transformers' rule for continue_final_message, case by case.
TEST(ServerPrefill, CutWhereTheFinalMessageEnds) {
  // A template that keeps the text as it is: the cut keeps its trailing space.
  EXPECT_EQ(continued_message_end("[INST] hi [/INST] Sure, </s>", "Sure, "), 24u);
  // One that trims it (Llama 3's "| trim"): the cut is after the stripped text.
  EXPECT_EQ(continued_message_end("<|start_header_id|>assistant<|end_header_id|>\n\nSure,<|eot_id|>", "Sure, "), 52u);
  // The last occurrence counts (the same words in an earlier turn).
  EXPECT_EQ(continued_message_end("A: Sure, B: x A: Sure, </s>", "Sure,"), 22u);
  EXPECT_FALSE(continued_message_end("nothing like it", "Sure,"));
  EXPECT_FALSE(continued_message_end("anything", "  \n"));
}

TEST(ServerParse, MessageNamePassesThrough) {
  auto r = chat(R"({"messages":[{"role":"user","content":"hi","name":"bob"},{"role":"user","content":"yo","name":null}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().messages[0]["name"], "bob");
  EXPECT_FALSE(r.value().messages[1].contains("name"));
  auto bad = chat(R"({"messages":[{"role":"user","content":"hi","name":7}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().status, 400);
  EXPECT_NE(bad.error().message.find("'name'"), std::string::npos) << bad.error().message;
}

// Tool fields that ask for no tool use (some SDKs always send them) are accepted; others are not
// (RejectsBadRequests).
TEST(ServerParse, AForcedChoiceNamesTheToolWhoseSchemaCannotBeFollowed) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"ok","parameters":{"type":"object"}}},
    {"type":"function","function":{"name":"tags","parameters":{"type":"object","properties":{"t":{"type":"array","uniqueItems":true}}}}}])";
  for (const std::string choice : {R"("required")", R"({"type":"function","function":{"name":"tags"}})"}) {
    auto r = chat(R"({"messages":[{"role":"user","content":"x"}],)" + tools + R"(,"tool_choice":)" + choice + "}");
    ASSERT_FALSE(r.ok()) << choice;
    EXPECT_NE(r.error().message.find("'tools[1].function.parameters' (\"tags\")"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("#/properties/t"), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find("anyOf"), std::string::npos) << r.error().message;
  }
  // Named, the other tool's schema is not compiled.
  EXPECT_TRUE(chat(R"({"messages":[{"role":"user","content":"x"}],)" + tools + R"(,"tool_choice":{"type":"function","function":{"name":"ok"}}})").ok());
}

TEST(ServerParse, EmptyToolsAndToolChoiceNoneAskForNothing) {
  auto r = chat(R"({"messages":[{"role":"user","content":"hi"}],"tools":[],"tool_choice":"none"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto c = completion(R"({"prompt":"hi","tool_choice":"none"})");
  ASSERT_TRUE(c.ok()) << c.error().message;
}

TEST(ServerParse, PromptListErrorsSayWhatIsWrong) {
  auto several = completion(R"({"prompt":["a",["b"]]})");
  ASSERT_FALSE(several.ok());
  EXPECT_NE(several.error().message.find("mixes strings"), std::string::npos) << several.error().message;
  auto mixed = completion(R"({"prompt":[1,"a"]})");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("mixes token ids"), std::string::npos) << mixed.error().message;
}

TEST(ServerParse, CompletionPromptForms) {
  auto a = completion(R"({"prompt":"hello","max_tokens":4,"logprobs":2})");
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_EQ(a.value().prompts.size(), 1u);
  EXPECT_EQ(a.value().prompts[0].text, "hello");
  EXPECT_TRUE(a.value().params.logprobs);
  EXPECT_EQ(a.value().params.top_logprobs, 2);
  auto b = completion(R"({"prompt":[1,2,3]})");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b.value().prompts.size(), 1u);
  EXPECT_TRUE(b.value().prompts[0].is_ids);
  EXPECT_EQ(b.value().prompts[0].ids.size(), 3u);
  auto c = completion(R"({"prompt":["one"]})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().prompts[0].text, "one");
  // Several prompts (strings, or token id lists as lm-evaluation-harness batches them), n each.
  auto d = completion(R"({"prompt":["one","two"],"n":3})");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d.value().prompts.size(), 2u);
  EXPECT_EQ(d.value().n, 3);
  auto e = completion(R"({"prompt":[[1,2],[3]]})");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e.value().prompts[1].ids, std::vector<int64_t>{3});
  for (const char* bad : {R"({"prompt":["a",[1]]})", R"({"prompt":[[1],"a"]})", R"({"prompt":[[1],[]]})", R"({"prompt":["a"],"n":129})",
                          R"({"prompt":["a","b","c"],"n":50})"})
    EXPECT_FALSE(completion(bad).ok()) << bad;
}

// An assistant message as the SDKs hand it back (model_dump(): the fields it did not use are null or
// empty) is accepted; text parts are joined on lines of their own, as llama-server and vLLM do.
TEST(ServerParse, SdkEchoedMessagesAndTextParts) {
  auto c = chat(R"({"messages":[{"role":"user","content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},
      {"role":"assistant","content":"Hi","refusal":null,"tool_calls":null,"function_call":null,"audio":null,"annotations":[]},
      {"role":"user","content":"Again"}]})");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c.value().messages.size(), 3u);
  EXPECT_EQ(c.value().messages[0]["content"], "Hel\nlo");
  EXPECT_EQ(c.value().messages[1], nlohmann::ordered_json({{"role", "assistant"}, {"content", "Hi"}}));
}

// Every one of these must be a 400 naming the problem, never a crash or an ignored field.
TEST(ServerParse, RejectsBadRequests) {
  const char* bad_chat[] = {
      "",
      "{",
      "[1,2]",
      "null",
      R"({"messages":"hi"})",
      R"({"messages":[]})",
      R"({})",
      R"({"messages":[{"role":"user"}]})",
      R"({"messages":[{"role":"wizard","content":"x"}]})",
      R"({"messages":[{"role":"tool","content":"x"}]})",
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
      R"({"messages":[{"role":"user","content":"x","tool_calls":[{"id":"call_1","type":"function"}]}]})",
      R"({"messages":[{"role":"user","content":"x","audio":{"id":"a"}}]})",
      R"({"messages":[{"role":"user","content":"x"}],"n":129})",
      R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})",
      R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"})",
      R"({"messages":[{"role":"user","content":"x"}],"tools":{}})",
      R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})",
      R"({"messages":[{"role":"user","content":"x"}],"response_format":"json_object"})",
      R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":false}}})",
      R"({"messages":[{"role":"user","content":"x"}],"json_schema":{"type":"integer","multipleOf":7}})",
      R"({"messages":[{"role":"user","content":"x"}],"json_schema":{"$ref":"https://example.com/s.json"}})",
      R"({"messages":[{"role":"user","content":"x"}],"grammar":"root ::= root"})",
      R"({"messages":[{"role":"user","content":"x"}],"grammar":"root ::= \"a\"","guided_regex":"a"})",
      R"({"messages":[{"role":"user","content":"x"}],"guided_regex":"(?<=a)b"})",
      R"({"messages":[{"role":"user","content":"x"}],"guided_choice":["a",1]})",
      R"({"messages":[{"role":"user","content":"x"}],"guided_json":"{\"type\":"})",
      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"5"})",
      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":-1})",
      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1.5})",
      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":99999999999999999999999})",
      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1e300})",
      R"({"messages":[{"role":"user","content":"x"}],"seed":18446744073709551615})",
      R"({"messages":[{"role":"user","content":"x"}],"seed":9223372036854775808.0})",
      R"({"messages":[{"role":"user","content":"x"}],"seed":1e400})",
      R"({"messages":[{"role":"user","content":"x"}],"temperature":-1})",
      R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})",
      R"({"messages":[{"role":"user","content":"x"}],"top_p":2})",
      R"({"messages":[{"role":"user","content":"x"}],"stop":5})",
      R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})",
      R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"abc":1}})",
      R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"1":1000}})",
      R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})",
      R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})",
      R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})",
      R"({"messages":[{"role":"user","content":"x"}],"ignore_eos":1})",
      R"({"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"bogus":true}})",
      R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})",
      R"({"messages":[{"role":"user","content":"x"}],"frobnicate":1})",
      R"({"messages":[{"role":"user","content":"x"}],"prompt":"also"})",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}",
  };
  for (const char* b : bad_chat) {
    auto r = chat(b);
    ASSERT_FALSE(r.ok()) << "accepted: " << b;
    EXPECT_EQ(r.error().status, 400);
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_NE(r.error().to_json().find("\"invalid_request_error\""), std::string::npos);
  }
  const char* bad_completion[] = {
      R"({})",
      R"({"prompt":5})",
      R"({"prompt":["a",5]})",
      R"({"prompt":[1,-2]})",
      R"({"prompt":[]})",
      R"({"prompt":"x","suffix":"y"})",
      R"({"prompt":"x","best_of":3})",
      R"({"prompt":"x","logprobs":6})",
      R"({"prompt":"x","logprobs":true})",
      R"({"prompt":"x","messages":[]})",
  };
  for (const char* b : bad_completion) {
    auto r = completion(b);
    ASSERT_FALSE(r.ok()) << "accepted: " << b;
    EXPECT_EQ(r.error().status, 400);
  }
}

TEST(ServerParse, InvalidJsonSaysWhereAndWhy) {
  auto r = chat("{\"messages\": [}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_NE(r.error().message.find("the request body is not valid JSON: parse error at line 1, column 15"), std::string::npos)
      << r.error().message;
  // A number beyond a double's range is valid JSON grammar, but no value: named as such.
  r = completion(R"({"prompt":"x","max_tokens":1e309})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("number overflow parsing '1e309'"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("[json.exception"), std::string::npos) << r.error().message;
}

// Deep nesting is refused before parsing: nlohmann::json copies recursively, so a few MB of "["
// would otherwise overflow the stack (found by the server_request fuzz target's regression inputs).
TEST(ServerParse, RefusesDeepNesting) {
  const std::string deep(100000, '[');
  auto r = chat(R"({"messages":[{"role":"user","content":)" + deep + std::string(100000, ']') + "}]}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_NE(r.error().message.find("nests 100003 levels deep; the limit is 64"), std::string::npos) << r.error().message;
  // Brackets inside strings do not count, and ordinary tool schemas fit.
  auto ok = chat(R"({"messages":[{"role":"user","content":")" + deep + R"("}]})");
  EXPECT_TRUE(ok.ok()) << ok.error().message;
}

TEST(ServerParse, NullMeansAbsent) {
  auto r = chat(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":null,"stop":null,"seed":null,"n":null})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r.value().params.seed_given);
}

// llama-server's "random" seeds: -1 and LLAMA_DEFAULT_SEED (4294967295); any other is kept.
TEST(ServerParse, LlamaServersRandomSeeds) {
  for (const char* seed : {"-1", "4294967295"}) {
    auto r = chat(std::string(R"({"messages":[{"role":"user","content":"x"}],"seed":)") + seed + "}");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_FALSE(r.value().params.seed_given) << seed;
  }
  auto kept = chat(R"({"messages":[{"role":"user","content":"x"}],"seed":4294967294})");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept.value().params.seed_given);
  EXPECT_EQ(kept.value().params.sampling.seed, 4294967294u);
}

TEST(ServerModelName, FileNameOrTheCheckpointsName) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "glia_model_name_test" / "Qwen3-0.6B";
  fs::create_directories(dir);
  EXPECT_EQ(served_model_name("/models/tiny.Q8_0.gguf", "tiny"), "tiny.Q8_0.gguf");  // as llama-server
  EXPECT_EQ(served_model_name(dir.string() + "/", "Qwen/Qwen3-0.6B"), "Qwen/Qwen3-0.6B");
  EXPECT_EQ(served_model_name(dir.string() + "/", ""), "Qwen3-0.6B");  // a trailing slash names the folder
  EXPECT_EQ(served_model_name((dir / "config.json").string(), ""), "Qwen3-0.6B");
  fs::remove_all(dir.parent_path());
}

TEST(ServerUtf8, Validation) {
  EXPECT_EQ(find_invalid_utf8("plain"), std::string_view::npos);
  EXPECT_EQ(find_invalid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), std::string_view::npos);
  EXPECT_EQ(find_invalid_utf8("ab\xc0\xaf"), 2u);         // overlong
  EXPECT_EQ(find_invalid_utf8("\xed\xa0\x80"), 0u);        // surrogate
  EXPECT_EQ(find_invalid_utf8("\xf4\x90\x80\x80"), 0u);    // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("x\xe2\x82"), 1u);           // truncated
  EXPECT_EQ(find_invalid_utf8("\x80"), 0u);                // lone continuation
}

TEST(ServerStopFilter, HoldsBackSplitStopStrings) {
  stop_filter f({"STOP", "\n\n"});
  bool hit = false;
  EXPECT_EQ(f.push("Hello S", hit), "Hello ");
  EXPECT_FALSE(hit);
  EXPECT_EQ(f.push("T", hit), "");
  EXPECT_EQ(f.push("x", hit), "STx");  // not a stop string after all
  EXPECT_EQ(f.push("ab\n", hit), "ab");
  EXPECT_EQ(f.push("\nrest", hit), "");
  EXPECT_TRUE(hit);
  stop_filter g({"END"});
  EXPECT_EQ(g.push("the E", hit), "the ");
  EXPECT_EQ(g.push("N", hit), "");
  EXPECT_EQ(g.push("D and more", hit), "");
  EXPECT_TRUE(hit);
  stop_filter h({"zz"});
  EXPECT_EQ(h.push("abz", hit), "ab");
  EXPECT_EQ(h.flush(), "z");
}

TEST(ServerAuth, BearerCompare) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secreT", "secret"));
  EXPECT_FALSE(constant_time_equal("secret1", "secret"));
  EXPECT_FALSE(constant_time_equal("", "secret"));
  EXPECT_TRUE(bearer_matches("Bearer secret", "secret"));
  EXPECT_TRUE(bearer_matches("bearer  secret ", "secret"));
  EXPECT_FALSE(bearer_matches("Basic secret", "secret"));
  EXPECT_FALSE(bearer_matches("Bearer", "secret"));
  EXPECT_FALSE(bearer_matches("", "secret"));
}

TEST(ServerSse, Framing) {
  EXPECT_EQ(sse_data(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done, "data: [DONE]\n\n");
}

TEST(ServerMetrics, PrometheusText) {
  metrics m;
  m.requests_chat = 3;
  m.generated_tokens = 10;
  m.decode_us = 2'000'000;
  gauges g;
  g.n_slots = 4;
  g.busy_slots = 1;
  g.kv_used_tokens = 50;
  g.kv_capacity_tokens = 100;
  const std::string t = m.render(g);
  EXPECT_NE(t.find("# TYPE glia_requests_total counter"), std::string::npos);
  EXPECT_NE(t.find("glia_requests_total{endpoint=\"chat\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("glia_decode_tokens_per_second 5.000"), std::string::npos);
  EXPECT_NE(t.find("glia_slots_busy 1\n"), std::string::npos);
  EXPECT_NE(t.find("glia_kv_cache_usage_ratio 0.500000"), std::string::npos);
}

}  // namespace
}  // namespace glia::server
