// `glia template` end to end: the built binary renders the pack's conversations exactly as Jinja2
// did, from HF tokenizer folders, from a GGUF with an embedded template, and with --template.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gguf/gguf.h"
#include "template_test_util.h"
#include "cli_runner.h"
#include "test_support.h"

namespace glia {
namespace {

using run_result = test::cli_result;
using test::quote;
using test::run_cli;

// Writes each pack conversation to a scratch file (as {"messages", "tools"}) and returns the paths.
std::map<std::string, std::string> conversation_files() {
  std::map<std::string, std::string> files;
  for (const auto& c : test::load_json(test::testdata("chat_templates/conversations.json"))) {
    const std::string path = test::scratch("conv_" + std::to_string(::getpid()) + "_" + c["name"].get<std::string>() + ".json");
    std::ofstream(path) << c.dump();
    files[c["name"]] = path;
  }
  return files;
}

// Runs every render of one pack template through the CLI with `source_args` choosing the template.
void check_pack_template(const std::string& stem, const std::string& source_args) {
  ASSERT_TRUE(std::filesystem::exists(test::cli_path())) << "build the glia target first";
  const auto convs = conversation_files();
  const jinja::json expected = test::load_json(test::testdata("chat_templates/expected/" + stem + ".json"));
  for (const auto& r : expected["renders"]) {
    const bool gen = r["add_generation_prompt"];
    const std::string args = "template " + source_args + " --messages " + quote(convs.at(r["conversation"])) +
                             (gen ? " --add-generation-prompt" : "") + " --date 2024-07-26";
    const run_result res = run_cli(args);
    const std::string what = stem + " " + r["conversation"].get<std::string>() + (gen ? " +gen" : "");
    if (r.contains("output")) {
      EXPECT_EQ(res.exit_code, 0) << what << ": " << res.err;
      EXPECT_EQ(res.out, r["output"].get<std::string>()) << what;
    } else {
      EXPECT_NE(res.exit_code, 0) << what;
      EXPECT_TRUE(res.out.empty()) << what;
      std::string err = r["error"];
      if (err.starts_with("TemplateError: ")) err = err.substr(15);
      EXPECT_NE(res.err.find(err), std::string::npos) << what << ": " << res.err;
    }
  }
}

TEST(cli_template, hf_tokenizer_folders) {
  for (const std::string name : {"llama3", "qwen3", "gemma3"})
    check_pack_template("tokenizer_config-" + name, "--tokenizer " + quote(test::testdata("tokenizers/" + name)));
}

TEST(cli_template, bare_template_with_gguf_special_tokens) {
  // The pack's models have Llama-2's vocabulary: <s> and </s>, as the Llama-2 renders used.
  const std::string model = quote(test::testdata("models/llama-untied-F16.gguf"));
  for (const std::string stem : {"meta-llama-Llama-2-13b-chat-hf", "mistralai-Mistral-Nemo-Instruct-2407",
                                 "Mistral-Small-3.2-24B-Instruct-2506"})
    check_pack_template(stem, "-m " + model + " --template " + quote(test::testdata("chat_templates/templates/" + stem + ".jinja")));
}

TEST(cli_template, template_embedded_in_gguf) {
  const std::string stem = "google-gemma-2-2b-it";  // raises for system messages
  gguf::writer w;
  w.set_string("general.architecture", "gemma2");
  w.set_string_array("tokenizer.ggml.tokens", {"<pad>", "<eos>", "<bos>", "<unk>"});
  w.set_u32("tokenizer.ggml.bos_token_id", 2);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_string("tokenizer.chat_template", test::read_text(test::testdata("chat_templates/templates/" + stem + ".jinja")));
  const std::string path = test::scratch("gemma2_with_template_" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(w.write(path).is_ok());
  check_pack_template(stem, "-m " + quote(path));
}

TEST(cli_template, usage_errors) {
  const auto convs = conversation_files();
  const std::string msgs = " --messages " + quote(convs.at("single_user"));
  run_result none = run_cli("template" + msgs);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("exactly one of"), std::string::npos) << none.err;

  run_result no_template = run_cli("template -m " + quote(test::testdata("models/llama-untied-F16.gguf")) + msgs);
  EXPECT_NE(no_template.exit_code, 0);
  EXPECT_NE(no_template.err.find("no chat template"), std::string::npos) << no_template.err;

  const std::string qwen3 = "template --tokenizer " + quote(test::testdata("tokenizers/qwen3")) + msgs;
  // Days past the month's end are refused rather than rolled into the next month.
  for (const char* bad : {"July", "2024-02-30", "2023-02-29", "2024-04-31", "2024-07-26T23:59:60"}) {
    run_result bad_date = run_cli(qwen3 + " --date " + bad);
    EXPECT_NE(bad_date.exit_code, 0) << bad;
    EXPECT_NE(bad_date.err.find("--date"), std::string::npos) << bad_date.err;
  }
  EXPECT_EQ(run_cli(qwen3 + " --date 2024-02-29").exit_code, 0);

  // A messages file that is not JSON: where the parser stopped.
  const std::string broken = test::scratch("broken-messages.json");
  test::write_text(broken, "[{\"role\": \"user\", \"content\": hi}]");
  run_result not_json = run_cli("template --tokenizer " + quote(test::testdata("tokenizers/qwen3")) + " --messages " + quote(broken));
  EXPECT_NE(not_json.exit_code, 0);
  EXPECT_NE(not_json.err.find("not valid JSON: parse error at line 1, column"), std::string::npos) << not_json.err;

  // Extra variables reach the template: Qwen3 closes an empty think block when thinking is off.
  run_result think = run_cli("template --tokenizer " + quote(test::testdata("tokenizers/qwen3")) + msgs +
                             " --add-generation-prompt --var enable_thinking=false");
  EXPECT_EQ(think.exit_code, 0) << think.err;
  EXPECT_TRUE(think.out.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n")) << think.out;
}

}  // namespace
}  // namespace glia
