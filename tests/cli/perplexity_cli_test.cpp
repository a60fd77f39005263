// glia perplexity prints what llama-perplexity prints: the running perplexity per chunk
// ("[1]12.3456,[2]...") and "Final estimate: PPL = X +/- Y"; a text shorter than two chunks is
// refused with the numbers.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <utility>

#include "child_process.h"
#include "cli_runner.h"
#include "test_support.h"

namespace glia {
namespace {

using test::quote;
using test::run_cli;

const char* kText =
    "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced no "
    "evidence that any irregularities took place. The jury further said in term-end presentments that the City "
    "Executive Committee, which had over-all charge of the election, deserves the praise and thanks of the City of "
    "Atlanta for the manner in which the election was conducted. The September-October term jury had been charged by "
    "Fulton Superior Court Judge Durwood Pye to investigate reports of possible irregularities in the hard-fought "
    "primary which was won by Mayor-nominate Ivan Allen Jr.\n";

TEST(cli_perplexity, prints_running_and_final_estimates) {
  const std::string path = test::scratch("perplexity-brown.txt");
  test::write_text(path, kText);
  auto r = run_cli("perplexity -m " + quote(test::testdata("models/brown-f32.gguf")) + " -f " + quote(path) + " -c 32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  std::string last_value, n_chunks;
  const std::regex chunk(R"(\[(\d+)\]([0-9.]+),)");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), chunk); it != std::sregex_iterator(); ++it) {
    n_chunks = (*it)[1];
    last_value = (*it)[2];
  }
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)\n)"))) << r.out;
  EXPECT_EQ(m[1].str(), last_value);  // the final estimate is the running one after the last chunk
  const double ppl = std::stod(m[1].str());
  EXPECT_GT(ppl, 1.0);
  EXPECT_LT(ppl, 1024.0);  // better than a uniform guess over the Brown model's 1024 tokens
  EXPECT_GE(std::stoi(n_chunks), 2);
  EXPECT_NE(r.err.find("tokens scored"), std::string::npos) << r.err;

  auto one = run_cli("perplexity -m " + quote(test::testdata("models/brown-f32.gguf")) + " -f " + quote(path) + " -c 32 --chunks 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.substr(0, one.out.find(',')), r.out.substr(0, r.out.find(',')));  // [1] is the same chunk
}

// --kl-divergence-base writes the base's log-probabilities; --kl-divergence compares a model with
// them (no text needed): the model with itself agrees everywhere.
TEST(cli_perplexity, kl_divergence_against_a_written_base) {
  const std::string text = test::scratch("perplexity-kld.txt"), base = test::scratch("perplexity-kld.base");
  test::write_text(text, kText);
  const std::string f32 = quote(test::testdata("models/brown-f32.gguf"));
  auto w = run_cli("perplexity -m " + f32 + " -f " + quote(text) + " -c 32 --kl-divergence-base " + quote(base));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.err.find("wrote the log-probabilities of"), std::string::npos) << w.err;
  auto same = run_cli("perplexity -m " + f32 + " --kl-divergence --kl-divergence-base " + quote(base));
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.err.find("note: the base's chunks"), std::string::npos) << same.err;  // -c was not given
  auto given = run_cli("perplexity -m " + f32 + " -c 64 --chunks 1 --kl-divergence --kl-divergence-base " + quote(base));
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_NE(given.err.find("note: the base's chunks are 32 tokens; -c follows them"), std::string::npos) << given.err;
  EXPECT_NE(given.err.find("note: --chunks applies when the base is written"), std::string::npos) << given.err;
  auto folder = run_cli("perplexity -m " + f32 + " --kl-divergence --kl-divergence-base " + quote(test::scratch("")));
  EXPECT_NE(folder.exit_code, 0);
  EXPECT_NE(folder.err.find("is a folder, not a file of log-probabilities"), std::string::npos) << folder.err;
  std::smatch top;
  // Not always 100%: two tokens within a record's step of each other tie for the base's top.
  ASSERT_TRUE(std::regex_search(same.out, top, std::regex(R"(Same top p: +([0-9.]+) ±)"))) << same.out;
  EXPECT_GE(std::stod(top[1].str()), 95.0);
  ASSERT_TRUE(std::regex_search(same.out, top, std::regex(R"(Mean    KLD: +(-?[0-9.]+) ±)"))) << same.out;
  EXPECT_LT(std::fabs(std::stod(top[1].str())), 1e-4);
  auto q8 = run_cli("perplexity -m " + quote(test::testdata("models/brown-q8_0.gguf")) + " --kl-divergence --kl-divergence-base " +
                    quote(base));
  ASSERT_EQ(q8.exit_code, 0) << q8.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(q8.out, m, std::regex(R"(Mean    KLD: +([0-9.]+) ±)"))) << q8.out;
  EXPECT_GT(std::stod(m[1].str()), 0.0);
  EXPECT_LT(std::stod(m[1].str()), 0.01);  // Q8_0 of the same weights
  auto other = run_cli("perplexity -m " + quote(test::testdata("models/qwen3-F16.gguf")) + " --kl-divergence --kl-divergence-base " +
                       quote(base));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("over 1024 tokens"), std::string::npos) << other.err;
  // A run that fails (a text too short for its chunks) leaves the base that was there.
  const std::string before = test::read_text(base);
  auto failed = run_cli("perplexity -m " + f32 + " -f " + quote(text) + " -c 512 --kl-divergence-base " + quote(base));
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_EQ(test::read_text(base), before);
}

// Ctrl-C while a base is written stops after the chunk being scored and leaves neither the base
// nor its temporary file (a real vocabulary's base runs to tens of GB).
TEST(cli_perplexity, ctrl_c_while_writing_a_base_removes_the_partial_file) {
  const std::string dir = test::scratch("ppl-interrupt-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = dir + "/long.txt", base = dir + "/base.kld";
  std::string long_text;
  for (int i = 0; i < 2000; ++i) long_text += kText;  // thousands of chunks of 16 tokens
  test::write_text(text, long_text);
  test::child_process c({test::cli_path(), "perplexity", "-m", test::testdata("models/brown-f32.gguf"), "-f", text, "-c", "16",
                         "-t", "1", "--kl-divergence-base", base});
  c.pump(60000, "", "[2]");
  ASSERT_NE(c.out.find("[2]"), std::string::npos) << c.err;
  c.signal(SIGINT);
  EXPECT_EQ(c.wait_exit(60000), 130) << c.err;
  EXPECT_NE(c.err.find("interrupted"), std::string::npos) << c.err;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename(), "long.txt") << "left behind: " << e.path();
  std::filesystem::remove_all(dir);
}

// A hung-up terminal (SIGHUP), a closed pipe on stderr (SIGPIPE, as in `glia quantize ... 2>&1 |
// head`) or a second Ctrl-C ends the run at once, as those signals do by default, but not before
// the partial file goes: no destructor runs when a signal ends a process. (Two Ctrl-Cs in a row may
// also find the run stopping after the first: 130 and no file either way.)
TEST(cli_perplexity, sighup_sigpipe_and_a_second_ctrl_c_remove_the_partial_file) {
  for (auto [sig, times] : {std::pair{SIGHUP, 1}, std::pair{SIGPIPE, 1}, std::pair{SIGINT, 2}}) {
    SCOPED_TRACE(sig);
    const std::string dir = test::scratch("ppl-signal-" + std::to_string(sig) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string text = dir + "/long.txt", base = dir + "/base.kld";
    std::string long_text;
    for (int i = 0; i < 2000; ++i) long_text += kText;
    test::write_text(text, long_text);
    test::child_process c({test::cli_path(), "perplexity", "-m", test::testdata("models/brown-f32.gguf"), "-f", text, "-c",
                           "16", "-t", "1", "--kl-divergence-base", base});
    c.pump(60000, "", "[2]");
    ASSERT_NE(c.out.find("[2]"), std::string::npos) << c.err;
    int partials = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) partials += e.path().filename() != "long.txt";
    EXPECT_EQ(partials, 1);  // the base being written
    for (int i = 0; i < times; ++i) c.signal(sig);
    EXPECT_EQ(c.wait_exit(60000), 128 + sig) << c.err;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      EXPECT_EQ(e.path().filename(), "long.txt") << "left behind: " << e.path();
    std::filesystem::remove_all(dir);
  }
}

// -c 0 takes the model's context (the Brown model's 256), as llama-perplexity takes its training
// context; 1-3 are still refused.
TEST(cli_perplexity, ctx_zero_uses_the_models_context) {
  const std::string path = test::scratch("perplexity-ctx0.txt");
  std::string text;
  for (int i = 0; i < 8; ++i) text += kText;  // > 512 tokens: two chunks of 256
  test::write_text(path, text);
  const std::string base = "perplexity -m " + quote(test::testdata("models/brown-f32.gguf")) + " -f " + quote(path);
  auto r = run_cli(base + " -c 0 --chunks 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("2 chunks of 256 tokens"), std::string::npos) << r.err;
  auto explicit_256 = run_cli(base + " -c 256 --chunks 2");
  ASSERT_EQ(explicit_256.exit_code, 0) << explicit_256.err;
  EXPECT_EQ(r.out, explicit_256.out);
  auto three = run_cli(base + " -c 3");
  EXPECT_NE(three.exit_code, 0);
  EXPECT_NE(three.err.find("at least 4 tokens"), std::string::npos) << three.err;
}

TEST(cli_perplexity, a_short_text_is_refused) {
  const std::string path = test::scratch("perplexity-short.txt");
  test::write_text(path, "The jury said.");
  auto r = run_cli("perplexity -m " + quote(test::testdata("models/brown-f32.gguf")) + " -f " + quote(path) + " -c 32");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("needs at least 64 (two chunks)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace glia
