// glia run --model-draft: llama.cpp's greedy continuations come out unchanged with a draft model
// proposing tokens, and a draft of another vocabulary is refused at start.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "test_support.h"

namespace glia {
namespace {

using test::quote;
using test::run_cli;

TEST(cli_speculative, greedy_continuations_are_the_golden_ones) {
  std::ifstream in(test::testdata("golden/brown-f32.json"));
  const auto m = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& item : m["greedy_continuations"]["items"]) {
    if (item["prompt_text"].is_null()) continue;
    const std::string prompt = item["prompt_text"];
    auto r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " --model-draft " +
                     quote(test::testdata("models/brown-q8_0.gguf")) + " --draft-max 6 --draft-p-min 0 -p " + quote(prompt) +
                     " -n 32 --temp 0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, item["continuation_text"].get<std::string>() + "\n") << prompt;
    EXPECT_NE(r.err.find("draft: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(" accepted ("), std::string::npos) << r.err;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(cli_speculative, a_draft_of_another_vocabulary_is_refused) {
  auto r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " --model-draft " +
                   quote(test::testdata("models/qwen3-F16.gguf")) + " -p hello -n 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("error: draft model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not the same vocabulary"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace glia
