// Hostile prompts and ids against a real model (Brown, n_vocab 1024, context 256), through the
// glia binary: ids outside the vocabulary or not numbers, more ids or prompt tokens than the
// context, a 100,000-character prompt, invalid UTF-8. Each either works or fails with one line.
#include <gtest/gtest.h>

#include <chrono>

#include "cli_runner.h"
#include "test_support.h"

namespace glia::test {
namespace {

const std::string brown = testdata("models/brown-f32.gguf");

std::string the_error(const cli_result& r) {
  const auto lines = lines_of(r.err);
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << ":\n" << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines.size(), 1u) << "stderr is not one line:\n" << r.err;
  if (lines.size() != 1 || lines[0].rfind("error: ", 0) != 0) return "(no single error line) " + r.err;
  return lines[0];
}

cli_result logits(const std::string& ids, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"logits", "-m", brown, "--ids", ids, "--out", scratch("bad_input_prompt.logits")};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_glia(args);
}

TEST(bad_prompt, id_equal_to_vocab_size) {
  EXPECT_EQ(the_error(logits("1,1024")), "error: token id 1024 (index 1) is outside the vocabulary (0..1023)");
}

TEST(bad_prompt, negative_id) {
  EXPECT_EQ(the_error(logits("-1")), "error: token id -1 (index 0) is outside the vocabulary (0..1023)");
}

TEST(bad_prompt, id_beyond_int32) {
  EXPECT_EQ(the_error(logits("1,99999999999")), "error: --ids: '99999999999' is not a token id");
}

TEST(bad_prompt, id_not_a_number) {
  EXPECT_EQ(the_error(logits("1,x2")), "error: --ids: 'x2' is not a token id");
}

TEST(bad_prompt, empty_id_in_list) {
  EXPECT_EQ(the_error(logits("1,,2")), "error: --ids: an empty item after 1 ids");
}

TEST(bad_prompt, more_ids_than_context) {
  std::string ids = "1";
  for (int i = 0; i < 20; ++i) ids += ",100";
  EXPECT_EQ(the_error(logits(ids, {"-c", "16"})), "error: 21 ids do not fit the context of 16 tokens (use -c)");
}

TEST(bad_prompt, prompt_longer_than_context) {
  const cli_result r = run_glia({"run", "-m", brown, "-p", "The jury said that the city of Atlanta had a long history",
                                 "-n", "4", "--temp", "0", "-c", "8"});
  const std::string e = the_error(r);
  EXPECT_EQ(e.rfind("error: the prompt needs ", 0), 0u) << e;
  EXPECT_TRUE(e.ends_with(" tokens, but the context holds 8")) << e;
}

TEST(bad_prompt, generation_past_the_context_ends_cleanly) {
  // 4 prompt tokens and 20 to generate in a context of 8: either the run stops at the context's
  // end or it fails with one line; it must not crash or write past the cache.
  const cli_result r = run_glia({"run", "-m", brown, "-p", "The jury", "-n", "20", "--temp", "0", "-c", "8"});
  EXPECT_EQ(r.signal, 0);
  if (r.exit_code != 0) {
    EXPECT_NE(the_error(r).find("context"), std::string::npos) << r.err;
  }
}

TEST(bad_prompt, hundred_thousand_characters) {
  const auto t0 = std::chrono::steady_clock::now();
  const cli_result r = run_glia({"run", "-m", brown, "-p", std::string(100000, 'a'), "-n", "2", "--temp", "0"});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Far more tokens than the 256-token context: a clean, immediate refusal. The count follows from
  // tokenizers/brown/tokenizer.vocab: no piece holds "aa", so it is BOS + "▁a" + 99999 x "a".
  EXPECT_EQ(the_error(r), "error: the prompt needs 100001 tokens, but the context holds 256");
  EXPECT_LT(secs, 60.0) << "tokenizing 100k characters took too long";
}

TEST(bad_prompt, invalid_utf8_prompt_works) {
  const cli_result r = run_glia({"run", "-m", brown, "-p", "\xff\xfe caf\xc3 \xed\xa0\x80", "-n", "3", "--temp", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.signal, 0);
}

TEST(bad_prompt, empty_prompt_works) {
  const cli_result r = run_glia({"run", "-m", brown, "-p", "", "-n", "3", "--temp", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(bad_prompt, special_token_text_is_plain_text) {
  const cli_result r = run_glia({"run", "-m", brown, "-p", "<s></s><unk>", "-n", "3", "--temp", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace glia::test
