// Every chat template of the test pack renders every conversation byte for byte as Jinja2 3.1.2 did
// in transformers' environment, and fails where Jinja2 raised, with the same message.
#include <gtest/gtest.h>

#include <filesystem>

#include "template_test_util.h"
#include "test_support.h"

namespace glia {
namespace {

std::vector<std::string> pack_templates() {
  std::vector<std::string> stems;
  for (const auto& e : std::filesystem::directory_iterator(test::testdata("chat_templates/expected")))
    if (e.path().extension() == ".json") stems.push_back(e.path().stem().string());
  std::sort(stems.begin(), stems.end());
  return stems;
}

jinja::special_tokens tokens_of(const jinja::json& j) {
  jinja::special_tokens t;
  for (const auto& [k, v] : j.items()) t.emplace_back(k, v.is_null() ? std::nullopt : std::optional(v.get<std::string>()));
  return t;
}

TEST(chat_template_pack, has_twenty_templates) { EXPECT_EQ(pack_templates().size(), 20u); }

class pack : public ::testing::TestWithParam<std::string> {};

TEST_P(pack, renders_like_jinja2) {
  const jinja::json expected = test::load_json(test::testdata("chat_templates/expected/" + GetParam() + ".json"));
  const jinja::json conversations = test::load_json(test::testdata("chat_templates/conversations.json"));
  const std::string source = test::read_text(test::testdata("chat_templates/" + expected["template"].get<std::string>()));
  ASSERT_FALSE(source.empty());
  auto compiled = jinja::compiled_template::compile(source);
  ASSERT_TRUE(compiled.is_ok()) << compiled.message();

  ASSERT_EQ(expected["renders"].size(), 8u);
  for (const auto& r : expected["renders"]) {
    const std::string conv_name = r["conversation"];
    const jinja::json* conv = nullptr;
    for (const auto& c : conversations)
      if (c["name"] == conv_name) conv = &c;
    ASSERT_NE(conv, nullptr) << conv_name;
    jinja::chat_inputs in;
    in.messages = (*conv)["messages"];
    if (conv->contains("tools")) in.tools = (*conv)["tools"];
    in.add_generation_prompt = r["add_generation_prompt"];
    in.tokens = tokens_of(expected["special_tokens"]);
    in.options.now = test::pack_clock();
    const std::string what = conv_name + (in.add_generation_prompt ? " +gen" : "");

    auto out = jinja::render_chat(*compiled, in);
    if (r.contains("output")) {
      ASSERT_TRUE(out.is_ok()) << what << ": " << out.message();
      EXPECT_EQ(*out, r["output"].get<std::string>()) << what;
    } else {
      const std::string err = r["error"];
      ASSERT_FALSE(out.is_ok()) << what << " rendered:\n" << *out;
      // raise_exception's message comes back exactly; Python errors keep their type and text.
      const std::string raised = "TemplateError: ";
      if (err.starts_with(raised)) EXPECT_EQ(out.message(), err.substr(raised.size())) << what;
      else EXPECT_NE(out.message().find(err), std::string::npos) << what << ": " << out.message();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(templates, pack, ::testing::ValuesIn(pack_templates()),
                         [](const auto& info) { return test::param_name(info.param); });

}  // namespace
}  // namespace glia
