// Loading chat templates and special-token texts from GGUF metadata and HF tokenizer folders.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gguf/gguf.h"
#include "template_test_util.h"
#include "test_support.h"

namespace glia {
namespace {

std::optional<std::string> token(const jinja::chat_template_set& s, const std::string& name) {
  for (const auto& [k, v] : s.tokens)
    if (k == name) return v;
  return std::string("<absent>");
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A GGUF with a four-token vocabulary and the given template keys.
std::string write_gguf(const std::string& name, const std::vector<std::pair<std::string, std::string>>& templates,
                       int64_t bos_id = 1) {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<|begin|>", "<|end|>", "hello"});
  w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(bos_id));
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  for (const auto& [k, v] : templates) w.set_string(k, v);
  const std::string path = test::scratch(name);
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

TEST(chat_template_loader, gguf_default_and_named_templates) {
  const std::string path = write_gguf("tmpl_named.gguf", {{"tokenizer.chat_template", "{{ bos_token }}default"},
                                                          {"tokenizer.chat_template.tool_use", "{{ eos_token }}tools"},
                                                          {"tokenizer.chat_template.rag", "rag"}});
  auto set = jinja::load_chat_templates_gguf(path);
  ASSERT_TRUE(set.is_ok()) << set.message();
  EXPECT_EQ(set->default_template, "{{ bos_token }}default");
  ASSERT_EQ(set->named.size(), 2u);
  EXPECT_EQ(*set->select("tool_use"), "{{ eos_token }}tools");
  EXPECT_EQ(*set->select("rag"), "rag");
  EXPECT_EQ(*set->select(), "{{ bos_token }}default");
  EXPECT_EQ(*set->select("", true), "{{ eos_token }}tools");  // HF picks tool_use when tools are given
  EXPECT_EQ(set->select("missing"), nullptr);
  EXPECT_EQ(token(*set, "bos_token"), "<|begin|>");
  EXPECT_EQ(token(*set, "eos_token"), "<|end|>");
  EXPECT_EQ(token(*set, "unk_token"), "<unk>");
  EXPECT_EQ(token(*set, "pad_token"), "<absent>");

  jinja::chat_inputs in;
  in.tokens = set->tokens;
  EXPECT_EQ(*jinja::render_chat(*set->select(), in), "<|begin|>default");
}

TEST(chat_template_loader, gguf_bad_token_id_is_an_error) {
  const std::string path = write_gguf("tmpl_bad_bos.gguf", {{"tokenizer.chat_template", "x"}}, 99);
  auto set = jinja::load_chat_templates_gguf(path);
  ASSERT_FALSE(set.is_ok());
  EXPECT_NE(set.message().find("tokenizer.ggml.bos_token_id = 99"), std::string::npos) << set.message();
}

// As the vocabulary loader reads them: 0xFFFFFFFF is "no such token" (llama2.c conversions such as the
// pack's stories260K write it for the padding id), and a padding id past the vocabulary is ignored.
TEST(chat_template_loader, gguf_absent_token_ids_are_skipped) {
  auto set = jinja::load_chat_templates_gguf(test::testdata("models/stories260K.gguf"));
  ASSERT_TRUE(set.is_ok()) << set.message();
  EXPECT_EQ(token(*set, "pad_token"), "<absent>");
  EXPECT_EQ(token(*set, "bos_token"), "<s>");
  const std::string none = write_gguf("tmpl_no_bos.gguf", {{"tokenizer.chat_template", "x"}}, 0xFFFFFFFFll);
  set = jinja::load_chat_templates_gguf(none);
  ASSERT_TRUE(set.is_ok()) << set.message();
  EXPECT_EQ(token(*set, "bos_token"), "<absent>");
}

TEST(chat_template_loader, gguf_model_without_template) {
  // The pack's models carry llama.cpp's Llama-2 SentencePiece vocabulary and no template.
  auto set = jinja::load_chat_templates_gguf(test::testdata("models/llama-untied-F16.gguf"));
  ASSERT_TRUE(set.is_ok()) << set.message();
  EXPECT_TRUE(set->default_template.empty());
  EXPECT_EQ(set->select(), nullptr);
  EXPECT_EQ(token(*set, "bos_token"), "<s>");
  EXPECT_EQ(token(*set, "eos_token"), "</s>");
  EXPECT_EQ(token(*set, "unk_token"), "<unk>");
}

TEST(chat_template_loader, hf_folders_match_the_pack) {
  // The pack's three extracted templates were rendered with these folders' configs.
  for (const std::string name : {"llama3", "qwen3", "gemma3"}) {
    auto set = jinja::load_chat_templates_hf(test::testdata("tokenizers/" + name));
    ASSERT_TRUE(set.is_ok()) << set.message();
    const jinja::json expected = test::load_json(test::testdata("chat_templates/expected/tokenizer_config-" + name + ".json"));
    const std::string source = test::read_text(test::testdata("chat_templates/templates/tokenizer_config-" + name + ".jinja"));
    EXPECT_EQ(set->default_template, source) << name;
    for (const auto& [k, v] : expected["special_tokens"].items())
      EXPECT_EQ(token(*set, k), v.is_null() ? std::nullopt : std::optional(v.get<std::string>())) << name << " " << k;
  }
  auto llama2 = jinja::load_chat_templates_hf(test::testdata("tokenizers/llama2"));
  ASSERT_TRUE(llama2.is_ok()) << llama2.message();
  EXPECT_TRUE(llama2->default_template.empty());  // its tokenizer_config has no chat_template
  EXPECT_EQ(token(*llama2, "bos_token"), "<s>");
  EXPECT_EQ(token(*llama2, "pad_token"), std::nullopt);
}

TEST(chat_template_loader, hf_template_list_and_token_objects) {
  const std::string dir = test::scratch("hf_tmpl_list");
  std::filesystem::create_directories(dir);
  write_text(dir + "/tokenizer_config.json", R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>",
    "pad_token": null,
    "chat_template": [{"name": "default", "template": "D{{ bos_token }}"}, {"name": "tool_use", "template": "T"}]
  })");
  std::filesystem::remove(dir + "/chat_template.jinja");
  auto set = jinja::load_chat_templates_hf(dir);
  ASSERT_TRUE(set.is_ok()) << set.message();
  EXPECT_EQ(*set->select(), "D{{ bos_token }}");
  EXPECT_EQ(*set->select("", true), "T");
  EXPECT_EQ(token(*set, "bos_token"), "<s>");
  EXPECT_EQ(token(*set, "eos_token"), "</s>");
  EXPECT_EQ(token(*set, "pad_token"), std::nullopt);
  EXPECT_EQ(token(*set, "unk_token"), std::nullopt);

  // A chat_template.jinja next to the config is the template newer transformers use.
  write_text(dir + "/chat_template.jinja", "J{{ eos_token }}");
  auto with_file = jinja::load_chat_templates_hf(dir);
  ASSERT_TRUE(with_file.is_ok());
  EXPECT_EQ(*with_file->select(), "J{{ eos_token }}");
}

TEST(chat_template_loader, hf_bad_config_is_an_error) {
  const std::string dir = test::scratch("hf_tmpl_bad");
  std::filesystem::create_directories(dir);
  write_text(dir + "/tokenizer_config.json", "{ not json");
  EXPECT_FALSE(jinja::load_chat_templates_hf(dir).is_ok());
  write_text(dir + "/tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_FALSE(jinja::load_chat_templates_hf(dir).is_ok());
  EXPECT_FALSE(jinja::load_chat_templates_hf(test::scratch("no_such_dir")).is_ok());
}

TEST(chat_inputs, variables_follow_hf) {
  jinja::chat_inputs in;
  in.messages = jinja::json::array({{{"role", "user"}, {"content", "hi"}}});
  in.tokens = {{"bos_token", "<s>"}, {"eos_token", std::nullopt}};
  in.extra = {{"enable_thinking", false}, {"bos_token", "[B]"}};
  auto out = jinja::render_chat(
      "{{ messages[0].content }}|{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ bos_token }}|{{ eos_token }}|"
      "{{ eos_token is defined }}|{{ enable_thinking }}",
      in);
  ASSERT_TRUE(out.is_ok()) << out.message();
  // A token the tokenizer does not set is left out (transformers passes special_tokens_map, which
  // keeps only the set ones): undefined, not None.
  EXPECT_EQ(*out, "hi|None|None|False|[B]||False|False");

  in.messages = jinja::json::object();
  EXPECT_FALSE(jinja::render_chat("x", in).is_ok());
}

}  // namespace
}  // namespace glia
