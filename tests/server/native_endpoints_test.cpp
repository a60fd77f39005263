// llama-server's own API through a live glia serve: /completion (and /completions) answer in its
// shape with the text /v1/completions gives, streamed as its events; /infill lays a code model's
// prompt out with its fill-in-the-middle markers; /props and /apply-template; the unversioned
// /chat/completions, /models and /v1/health.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "http_helpers.h"
#include "test_support.h"
#include "think_fixtures.h"

namespace glia::test {
namespace {

using nlohmann::json;

std::vector<int> token_ids(const server_process& srv, const std::string& text, bool parse_special = false) {
  const http_reply r = post(srv, "/tokenize", json{{"content", text}, {"parse_special", parse_special}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json()["tokens"].get<std::vector<int>>();
}

TEST(ServerNative, CompletionInLlamaServersShape) {
  server_process srv({"-m", test_model()});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const json oai = post(srv, "/v1/completions", json{{"prompt", "The jury said"}, {"max_tokens", 6}, {"temperature", 0}}).json();
  const json req = {{"prompt", "The jury said"}, {"n_predict", 6}, {"temperature", 0}, {"n_probs", 3}, {"cache_prompt", true}, {"tfs_z", 1}};
  const http_reply r = post(srv, "/completion", req);
  ASSERT_EQ(r.status, 200) << r.body;  // fields llama-server has dropped (tfs_z) are ignored, as it does
  const json a = r.json();
  EXPECT_EQ(a["content"], oai["choices"][0]["text"]) << r.body;
  EXPECT_EQ(a["stop"], true);
  EXPECT_EQ(a["stop_type"], "limit");
  EXPECT_EQ(a["tokens_predicted"], 6);
  EXPECT_EQ(a["tokens_evaluated"], oai["usage"]["prompt_tokens"]);
  EXPECT_EQ(a["generation_settings"]["n_predict"], 6);
  EXPECT_GE(a["timings"]["predicted_ms"].get<double>(), 0.0);
  EXPECT_EQ(a["timings"]["predicted_n"], 6);
  // Per token: its id, text and log probability, with the 3 most likely (greedy: the token is the first).
  ASSERT_EQ(a["completion_probabilities"].size(), 6u) << r.body;
  std::string joined;
  for (const json& t : a["completion_probabilities"]) {
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    EXPECT_EQ(t["top_logprobs"][0]["id"], t["id"]);
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    joined += t["token"].get<std::string>();
  }
  EXPECT_EQ(joined, a["content"]);
  EXPECT_EQ(post(srv, "/completions", req).json()["content"], a["content"]);  // the other spelling

  // Streamed: the pieces make the content; the last event is the result (no [DONE]).
  json streamed = req;
  streamed["stream"] = true;
  const http_reply s = post(srv, "/completion", streamed);
  ASSERT_EQ(s.status, 200) << s.body;
  std::string text;
  json last;
  for (const std::string& p : sse_payloads(s.body)) {
    ASSERT_NE(p, "[DONE]");
    last = json::parse(p);
    text += last["content"].get<std::string>();
  }
  EXPECT_EQ(text, a["content"]);
  EXPECT_EQ(last["stop"], true);
  EXPECT_EQ(last["tokens_predicted"], 6);
  EXPECT_TRUE(last.contains("timings"));

  // A stop word, a ban in llama-server's [[id, false]] form, several prompts.
  json stopped = req;
  const std::string first_token = a["completion_probabilities"][1]["token"].get<std::string>();
  stopped["stop"] = {first_token};
  const json w = post(srv, "/completion", stopped).json();
  EXPECT_EQ(w["stop_type"], "word") << w;
  EXPECT_EQ(w["stopping_word"], first_token);
  json banned = req;
  const int first_id = a["completion_probabilities"][0]["id"].get<int>();
  banned["logit_bias"] = json::array({json::array({first_id, false})});
  const json b = post(srv, "/completion", banned).json();
  EXPECT_NE(b["completion_probabilities"][0]["id"], first_id) << b;
  const json several = post(srv, "/completion", json{{"prompt", {"The jury said", "It was"}}, {"n_predict", 2}, {"temperature", 0}}).json();
  ASSERT_TRUE(several.is_array()) << several;
  ASSERT_EQ(several.size(), 2u);
  EXPECT_EQ(several[1]["index"], 1);
  // llama-server's mixed prompts: ids and text in one (BOS only where it starts with text), or
  // prompts of different forms in one request.
  json mixed = req;
  mixed["prompt"] = json::array({1, "The jury said"});
  EXPECT_EQ(post(srv, "/completion", mixed).json()["content"], a["content"]);
  const std::vector<int> with_bos = [&] {
    std::vector<int> ids = {1};
    for (int id : token_ids(srv, "It was")) ids.push_back(id);
    return ids;
  }();
  const json forms = post(srv, "/completion", json{{"prompt", json::array({"The jury said", with_bos})}, {"n_predict", 2}, {"temperature", 0}}).json();
  ASSERT_TRUE(forms.is_array()) << forms;
  EXPECT_EQ(forms[0]["content"], several[0]["content"]);
  EXPECT_EQ(forms[1]["content"], several[1]["content"]);
  // What glia does not have is refused, not left out.
  for (const json& unsupported : {json{{"mirostat", 2}}, json{{"logit_bias", {{"the", -1}}}}, json{{"dynatemp_range", 0.5}},
                                  json{{"top_n_sigma", 1.0}}}) {
    json bad = unsupported;
    bad["prompt"] = "x";
    EXPECT_EQ(post(srv, "/completion", bad).status, 400) << unsupported;
  }
  // llama-server's readings: top_k <= 0 is off, a negative temperature greedy; seed -1 random.
  json lenient = req;
  lenient["top_k"] = -1;
  lenient["temperature"] = -1;
  lenient["seed"] = -1;
  EXPECT_EQ(post(srv, "/completion", lenient).json()["content"], a["content"]);
  // A random seed is reported as one that can be sent back (32 bits, as llama-server's).
  json drawn = {{"prompt", "The jury said"}, {"n_predict", 6}, {"temperature", 1.0}};
  const json first = post(srv, "/completion", drawn).json();
  const uint64_t seed = first["generation_settings"]["seed"].get<uint64_t>();
  EXPECT_LE(seed, 0xFFFFFFFFull);
  drawn["seed"] = seed;
  EXPECT_EQ(post(srv, "/completion", drawn).json()["content"], first["content"]);
  // return_tokens gives the ids; response_fields only the paths asked for (llama.vscode's).
  json fields = req;
  fields["return_tokens"] = true;
  fields["response_fields"] = {"content", "timings/predicted_n", "tokens", "no/such"};
  const json f = post(srv, "/completion", fields).json();
  ASSERT_EQ(f.size(), 3u) << f;
  EXPECT_EQ(f["content"], a["content"]);
  EXPECT_EQ(f["timings/predicted_n"], 6);
  ASSERT_EQ(f["tokens"].size(), 6u);
  EXPECT_EQ(f["tokens"][0], a["completion_probabilities"][0]["id"]);
  EXPECT_EQ(a["tokens_cached"], a["tokens_evaluated"].get<int>() + 5);  // the last token is not in the cache yet
  EXPECT_FALSE(last.contains("completion_probabilities"));  // the stream's last event repeats none
  // A JSON schema's properties keep the order they are declared in (the grammar writes them so).
  const json schema_req = json::parse(R"({"prompt": "The jury said", "n_predict": 40, "temperature": 0,
    "json_schema": {"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}},
                    "required": ["zeta", "alpha"], "additionalProperties": false}})");
  const std::string body = schema_req.dump();  // nlohmann sorts keys: write the order by hand
  std::string ordered = body;
  ordered.replace(ordered.find(R"("alpha":{"type":"integer"},"zeta":{"type":"integer"})"), 52,
                  R"("zeta":{"type":"integer"},"alpha":{"type":"integer"})");
  const http_reply js = post(srv, "/completion", ordered);
  ASSERT_EQ(js.status, 200) << js.body;
  const std::string generated = js.json()["content"].get<std::string>();
  EXPECT_LT(generated.find("zeta"), generated.find("alpha")) << generated;
  // llama-server's seeds are 32 bits: -5 is 4294967291.
  json wrapped = drawn;
  wrapped["seed"] = -5;
  EXPECT_EQ(post(srv, "/completion", wrapped).json()["generation_settings"]["seed"], 4294967291u);
  // post_sampling_probs: probabilities among what the sampler's chain left (top_k 3: at most three),
  // the sampled token's among them.
  json post_req = {{"prompt", "The jury said"}, {"n_predict", 4}, {"temperature", 0.8}, {"top_k", 3}, {"seed", 4}, {"n_probs", 5}, {"post_sampling_probs", true}};
  const json ps = post(srv, "/completion", post_req).json();
  ASSERT_EQ(ps["completion_probabilities"].size(), 4u) << ps;
  for (const json& t : ps["completion_probabilities"]) {
    ASSERT_TRUE(t.contains("prob") && t.contains("top_probs")) << t;
    EXPECT_LE(t["top_probs"].size(), 3u);
    double sum = 0, mine = -1;
    for (const json& x : t["top_probs"]) {
      sum += x["prob"].get<double>();
      if (x["id"] == t["id"]) mine = x["prob"].get<double>();
    }
    EXPECT_NEAR(sum, 1.0, 1e-4) << t;
    EXPECT_NEAR(mine, t["prob"].get<double>(), 1e-9) << t;
  }
  // /tokenize ignores fields it does not read, as llama-server's does.
  EXPECT_EQ(post(srv, "/tokenize", json{{"content", "The"}, {"model", "x"}}).status, 200);
}

TEST(ServerNative, PropsApplyTemplateAndOtherSpellings) {
  server_process srv({"-m", test_model(), "--chat-template", llama2_chat_template(), "--parallel", "2", "-c", "512"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const http_reply p = get(srv, "/props");
  ASSERT_EQ(p.status, 200) << p.body;
  const json props = p.json();
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 512);
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["chat_template"], read_text(llama2_chat_template()));
  EXPECT_EQ(props["bos_token"], "<s>");
  EXPECT_EQ(props["eos_token"], "</s>");

  const json messages = {{{"role", "user"}, {"content", "Hello"}}};
  const http_reply t = post(srv, "/apply-template", json{{"messages", messages}});
  ASSERT_EQ(t.status, 200) << t.body;
  const std::string prompt = t.json()["prompt"].get<std::string>();
  EXPECT_EQ(prompt, "<s>[INST] Hello [/INST]");
  const json chat = post(srv, "/v1/chat/completions", json{{"messages", messages}, {"max_tokens", 3}, {"temperature", 0}}).json();
  EXPECT_EQ(chat["usage"]["prompt_tokens"], int(token_ids(srv, prompt, true).size()));
  const json unversioned = post(srv, "/chat/completions", json{{"messages", messages}, {"max_tokens", 3}, {"temperature", 0}}).json();
  EXPECT_EQ(unversioned["choices"][0]["message"], chat["choices"][0]["message"]);
  EXPECT_EQ(get(srv, "/models").json()["data"][0]["id"], get(srv, "/v1/models").json()["data"][0]["id"]);
  EXPECT_EQ(get(srv, "/v1/health").status, 200);
}

// Templates with a thinking switch think unless told not to, as llama-server renders them: the
// R1 distill's (llama.cpp's copy) leaves the reasoning open, a budget of 0 or enable_thinking false
// closes it.
TEST(ServerNative, TemplatesThinkByDefault) {
  server_process srv({"-m", test_model(), "--chat-template", testdata("chat_templates/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja")});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const json messages = {{{"role", "user"}, {"content", "Hello"}}};
  const auto rendered = [&](const json& extra) {
    json body = extra;
    body["messages"] = messages;
    const http_reply r = post(srv, "/apply-template", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["prompt"].get<std::string>();
  };
  const std::string thinking = rendered(json::object());
  EXPECT_TRUE(thinking.ends_with("<think>\n")) << thinking;
  for (const json& off : {json{{"chat_template_kwargs", {{"enable_thinking", false}}}}, json{{"thinking_budget_tokens", 0}}})
    EXPECT_FALSE(rendered(off).ends_with("<think>\n")) << off;
}

// /infill on the Brown model with five pieces made a code model's FIM markers: the prompt is laid
// out as llama-server lays it (the repository and files, BOS, prefix and the request's prompt,
// suffix, middle), which the same tokens sent to /completion confirm.
TEST(ServerNative, InfillLaysOutTheMarkers) {
  const std::string model = brown_with_control_tokens(
      "brown_fim.gguf", {{1000, "<|fim_prefix|>"}, {1001, "<|fim_suffix|>"}, {1002, "<|fim_middle|>"}, {1003, "<|fim_repo|>"}, {1004, "<|file_sep|>"}});
  // The extra texts get what the context leaves after a batch (llama-server's 2048) and twice n_predict.
  server_process srv({"-m", model, "-c", "4096"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const json req = {{"input_prefix", "The jury said"},
                    {"input_suffix", "of the city"},
                    {"input_extra", {{{"filename", "a.txt"}, {"text", "It was"}}}},
                    {"prompt", " that"},
                    {"n_predict", 4},
                    {"temperature", 0}};
  const http_reply r = post(srv, "/infill", req);
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<int> layout = {1003};
  const auto add = [&](const std::string& text) {
    for (int id : token_ids(srv, text)) layout.push_back(id);
  };
  add("myproject\n");
  layout.push_back(1004);
  add("a.txt\n");
  add("It was");
  layout.push_back(1004);
  add("filename\n");
  layout.push_back(1);  // BOS
  layout.push_back(1000);
  add("The jury said");
  add(" that");
  layout.push_back(1001);
  add("of the city");
  layout.push_back(1002);
  EXPECT_EQ(r.json()["tokens_evaluated"], int(layout.size())) << r.body;
  const json same = post(srv, "/completion", json{{"prompt", layout}, {"n_predict", 4}, {"temperature", 0}}).json();
  EXPECT_EQ(r.json()["content"], same["content"]) << r.body;
  // A bias on a token outside the vocabulary is refused here too.
  json bad = req;
  bad["logit_bias"] = json::array({json::array({999999, -1})});
  EXPECT_EQ(post(srv, "/infill", bad).status, 400);

  // In a context too small for them, the extra texts are left out.
  server_process small({"-m", model, "-c", "256"});
  ASSERT_NE(small.port(), 0) << small.log();
  const auto from_bos = layout.end() - std::find(layout.begin(), layout.end(), 1);  // BOS [PRE] to [MID]
  EXPECT_EQ(post(small, "/infill", req).json()["tokens_evaluated"], int(from_bos));

  server_process plain({"-m", test_model()});
  ASSERT_NE(plain.port(), 0) << plain.log();
  const http_reply no_fim = post(plain, "/infill", req);
  EXPECT_EQ(no_fim.status, 400) << no_fim.body;
  EXPECT_NE(no_fim.body.find("fill-in-the-middle"), std::string::npos) << no_fim.body;
}

}  // namespace
}  // namespace glia::test
