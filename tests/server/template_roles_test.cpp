// Chat templates without a system role (Gemma 1/2's raise "System role not supported"): a system
// message's text opens the first user message instead, as llama.cpp does, so clients that always send
// one (Claude Code, most agents) still get answers; and templates that want roles to alternate get
// consecutive user messages as one.
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

int prompt_tokens(const server_process& srv, const json& messages) {
  const http_reply r = post(srv, "/v1/chat/completions", json{{"messages", messages}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json()["usage"]["prompt_tokens"].get<int>();
}

TEST(ServerTemplateRoles, ASystemMessageOpensTheFirstUserMessageWhereTheTemplateHasNoSystemRole) {
  server_process srv({"-m", test_model(), "--chat-template", testdata("chat_templates/templates/google-gemma-2-2b-it.jinja"), "-t", "1"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  const json with_system = json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"},
    {"role":"assistant","content":"Hi"},{"role":"user","content":"Bye"}])");
  const json merged = json::parse(R"([{"role":"user","content":"Be brief.\n\nHello"},{"role":"assistant","content":"Hi"},{"role":"user","content":"Bye"}])");
  EXPECT_EQ(prompt_tokens(srv, with_system), prompt_tokens(srv, merged));
  // A system message alone is the user's.
  EXPECT_EQ(prompt_tokens(srv, json::parse(R"([{"role":"system","content":"Hello"}])")),
            prompt_tokens(srv, json::parse(R"([{"role":"user","content":"Hello"}])")));
  // Two user messages in a row (Codex opens so), which the template refuses, are one.
  EXPECT_EQ(prompt_tokens(srv, json::parse(R"([{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"user","content":"b"}])")),
            prompt_tokens(srv, json::parse(R"([{"role":"user","content":"s\n\na\n\nb"}])")));
  // Anthropic's top-level system prompt, as Claude Code always sends one.
  const http_reply m = post(srv, "/v1/messages", json{{"max_tokens", 2}, {"system", "Be brief."}, {"messages", {{{"role", "user"}, {"content", "Hello"}}}}});
  EXPECT_EQ(m.status, 200) << m.body;
}

TEST(ServerTemplateRoles, ATemplateWithASystemRoleShowsItAsItWrites) {
  server_process srv({"-m", test_model(), "--chat-template", llama2_chat_template(), "-t", "1"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  // Llama 2's template wraps the system text in <<SYS>> markers: more tokens than the merged text.
  EXPECT_GT(prompt_tokens(srv, json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}])")),
            prompt_tokens(srv, json::parse(R"([{"role":"user","content":"Be brief.\n\nHello"}])")));
}

// A chat starts with BOS once where the vocabulary adds one (the Brown model's does) though ChatML
// writes none, as llama-server tokenizes it; a template that renders nothing is a 400, not a prompt
// of BOS alone.
TEST(ServerTemplateRoles, ChatPromptsStartWithTheVocabularysBos) {
  server_process srv({"-m", test_model(), "--chat-template", "chatml", "-t", "1"});
  ASSERT_GT(srv.port(), 0) << srv.log();
  const http_reply t = post(srv, "/tokenize", json{{"content", "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"}, {"add_special", true}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(prompt_tokens(srv, json::parse(R"([{"role":"user","content":"Hello"}])")), int(t.json()["tokens"].size()));

  server_process empty({"-m", test_model(), "--chat-template", write_scratch("renders_nothing.jinja", "{% if false %}x{% endif %}"), "-t", "1"});
  ASSERT_GT(empty.port(), 0) << empty.log();
  const http_reply r = post(empty, "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("rendered nothing"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace glia::test
