// Templates without a system role: the probe that finds them (on the real templates of the pack)
// and the merge of a system message's text into the next user message.
#include <gtest/gtest.h>

#include "test_support.h"
#include "tokenizer/jinja/chat_template.h"
#include "tokenizer/jinja/jinja.h"

namespace glia {
namespace {

bool shows_system(const std::string& stem) {
  auto t = jinja::compiled_template::compile(test::read_text(test::testdata("chat_templates/templates/" + stem + ".jinja")));
  EXPECT_TRUE(t) << stem;
  const jinja::special_tokens tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  return t && jinja::shows_system_role(*t, tokens);
}

TEST(system_role, found_by_rendering_one) {
  EXPECT_FALSE(shows_system("google-gemma-2-2b-it"));  // raises "System role not supported"
  // A tool_use template that fails without tools is asked with one.
  for (const char* stem : {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "meta-llama-Llama-2-13b-chat-hf", "meta-llama-Llama-3.1-8B-Instruct", "Qwen-Qwen3-0.6B",
                           "mistralai-Mistral-Nemo-Instruct-2407", "google-gemma-4-31B-it", "microsoft-Phi-3.5-mini-instruct"})
    EXPECT_TRUE(shows_system(stem)) << stem;
}

TEST(system_role, text_opens_the_next_user_message) {
  const auto merged = jinja::system_text_to_user(jinja::json::parse(R"([{"role":"system","content":"a"},{"role":"system","content":"b"},
    {"role":"user","content":"u1"},{"role":"assistant","content":"x"},{"role":"user","content":"u2"}])"));
  EXPECT_EQ(merged, jinja::json::parse(R"([{"role":"user","content":"a\n\nb\n\nu1"},{"role":"assistant","content":"x"},{"role":"user","content":"u2"}])"));
  EXPECT_EQ(jinja::system_text_to_user(jinja::json::parse(R"([{"role":"system","content":"only"}])")),
            jinja::json::parse(R"([{"role":"user","content":"only"}])"));
  EXPECT_EQ(jinja::system_text_to_user(jinja::json::parse(
                R"([{"role":"user","content":"u"},{"role":"assistant","content":"x"},{"role":"system","content":"s"},{"role":"assistant","content":"y"}])")),
            jinja::json::parse(
                R"([{"role":"user","content":"u"},{"role":"assistant","content":"x"},{"role":"user","content":"s"},{"role":"assistant","content":"y"}])"));
}

TEST(alternating_roles, found_by_rendering_two_user_messages) {
  const jinja::special_tokens tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  const auto alternating = [&](const std::string& stem) {
    auto t = jinja::compiled_template::compile(test::read_text(test::testdata("chat_templates/templates/" + stem + ".jinja")));
    return t && jinja::requires_alternating_roles(*t, tokens);
  };
  for (const char* stem : {"google-gemma-2-2b-it", "meta-llama-Llama-2-13b-chat-hf"}) EXPECT_TRUE(alternating(stem)) << stem;
  for (const char* stem : {"Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "google-gemma-4-31B-it"}) EXPECT_FALSE(alternating(stem)) << stem;
  EXPECT_EQ(jinja::join_consecutive_turns(jinja::json::parse(R"([{"role":"system","content":"s"},{"role":"system","content":"t"},{"role":"user","content":"u"}])")),
            jinja::json::parse(R"([{"role":"system","content":"s\n\nt"},{"role":"user","content":"u"}])"));
  EXPECT_EQ(jinja::join_consecutive_turns(jinja::json::parse(R"([{"role":"user","content":"a"},{"role":"user","content":"b"},
    {"role":"assistant","content":"x"},{"role":"assistant","content":"","tool_calls":[]},{"role":"user","content":"c"}])")),
            jinja::json::parse(R"([{"role":"user","content":"a\n\nb"},{"role":"assistant","content":"x"},
    {"role":"assistant","content":"","tool_calls":[]},{"role":"user","content":"c"}])"));
}

}  // namespace
}  // namespace glia
