// glia run --model-draft: llama.cpp's greedy continuations come out unchanged with a draft model
// proposing tokens, and a draft of another vocabulary is refused at start.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

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

// --profile with a draft: decode counts the evaluated tokens that stay (as without a draft: one
// fewer than generated, since no draft outlives -n), not every position a verification pass
// checked, and its rate includes the draft model's time.
TEST(cli_speculative, the_profile_counts_kept_tokens_and_the_drafts_time) {
  const std::string prof = test::scratch("spec_profile_" + std::to_string(::getpid()) + ".json");
  auto r = run_cli("run -m " + quote(test::testdata("models/brown-f32.gguf")) + " --model-draft " +
                   quote(test::testdata("models/brown-q8_0.gguf")) +
                   " --draft-p-min 0 -p 'She opened the door and' -n 40 --temp 0.8 -s 42 -t 1 --profile --profile-json " +
                   quote(prof));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = nlohmann::json::parse(test::read_text(prof));
  const auto& d = p["decode"];
  const int generated = 40;
  EXPECT_EQ(d["tokens"].get<int>(), generated - 1) << d.dump();
  EXPECT_GT(d["dropped_draft_tokens"].get<int>(), 0) << d.dump();  // sampling at 0.8 rejects some
  EXPECT_GT(d["draft_ms"].get<double>(), 0.0) << d.dump();
  const double rate = d["tokens"].get<double>() / ((d["ms"].get<double>() + d["draft_ms"].get<double>()) / 1000.0);
  EXPECT_NEAR(d["tokens_per_second"].get<double>(), rate, 1e-6 * rate) << d.dump();
  EXPECT_NE(r.err.find("ms in the draft model"), std::string::npos) << r.err;
  std::remove(prof.c_str());
}

// --draft-max 0 turns speculative decoding off, as llama.cpp's does: the text as without a draft.
TEST(cli_speculative, draft_max_0_decodes_without_a_draft) {
  const std::string args = "run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p 'The jury said' -n 12 --temp 0";
  auto plain = run_cli(args);
  auto off = run_cli(args + " --model-draft " + quote(test::testdata("models/brown-q8_0.gguf")) + " --draft-max 0");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out, plain.out);
  EXPECT_NE(off.err.find("no speculative decoding"), std::string::npos) << off.err;
  EXPECT_EQ(off.err.find("draft: "), std::string::npos) << off.err;
}

// --draft-min: proposals shorter than it are dropped unchecked (the text stays the same).
TEST(cli_speculative, proposals_shorter_than_draft_min_are_not_checked) {
  const std::string args = "run -m " + quote(test::testdata("models/brown-f32.gguf")) + " --model-draft " +
                           quote(test::testdata("models/brown-q8_0.gguf")) + " -p 'The jury said' -n 30 --temp 0 --draft-p-min 0";
  auto any = run_cli(args + " --draft-max 5");
  auto five = run_cli(args + " --draft-max 5 --draft-min 5");
  ASSERT_EQ(any.exit_code, 0) << any.err;
  ASSERT_EQ(five.exit_code, 0) << five.err;
  EXPECT_EQ(five.out, any.out);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(five.err, m, std::regex(R"(draft: (\d+) proposed)"))) << five.err;
  EXPECT_GT(std::stoi(m[1].str()), 0) << five.err;
  EXPECT_EQ(std::stoi(m[1].str()) % 5, 0) << five.err;
  ASSERT_TRUE(std::regex_search(any.err, m, std::regex(R"(draft: (\d+) proposed)"))) << any.err;
  // Near -n the room for drafts shrinks: a shorter last proposal is checked only without the minimum.
  EXPECT_NE(std::stoi(m[1].str()) % 5, 0) << any.err;
  auto bad = run_cli(args + " --draft-max 4 --draft-min 5");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--draft-min 5 is more than --draft-max 4"), std::string::npos) << bad.err;
}

// llama.cpp's spellings: -md is --model-draft; -ngld, which glia has not, is refused with why (CLI11
// alone would read "-md x" as "-m d x").
TEST(cli_speculative, llama_cpp_spellings_of_the_draft_options) {
  const std::string args = "run -m " + quote(test::testdata("models/brown-f32.gguf")) + " -p 'The jury said' -n 8 --temp 0";
  auto plain = run_cli(args + " --model-draft " + quote(test::testdata("models/brown-q8_0.gguf")));
  auto md = run_cli(args + " -md " + quote(test::testdata("models/brown-q8_0.gguf")));
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out, plain.out);
  EXPECT_NE(md.err.find("draft: "), std::string::npos) << md.err;
  auto ngld = run_cli(args + " -ngld 99");
  EXPECT_EQ(ngld.exit_code, 1);
  EXPECT_NE(ngld.err.find("error: -ngld is llama.cpp's option, not glia's"), std::string::npos) << ngld.err;
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
