// `glia tokenize` and `glia detokenize` as a user runs them, checked against the reference ids and
// texts of the pack (transformers.js for the tokenizer.json folders, llama.cpp for the Brown GGUF).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace glia::test {
namespace {

std::vector<nlohmann::json> jsonl(const std::string& rel) {
  std::ifstream in(testdata(rel));
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

std::string ids_line(const nlohmann::json& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : " ") + std::to_string(id.get<int>());
  return s + "\n";
}

std::string ids_csv(const nlohmann::json& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ",") + std::to_string(id.get<int>());
  return s;
}

std::string write_scratch(const std::string& stem, const std::string& bytes) {
  const std::string path = scratch(stem + "_" + std::to_string(::getpid()));
  write_text(path, bytes);
  return path;
}

class hf_folder : public ::testing::TestWithParam<const char*> {};

// Three rows spread over the file (an odd step: the two add_special variants of a text alternate in
// the file, so both are among them). Each row is up to three process starts that load the tokenizer
// (gemma3's ~8 s under ASan), so the whole file is left to the tokenizer library tests; these check
// the command-line plumbing.
TEST_P(hf_folder, tokenize_file_and_detokenize_match_the_reference) {
  const std::string dir = testdata(std::string("tokenizers/") + GetParam());
  const auto rows = jsonl(std::string("tokenizers/") + GetParam() + "/expected.jsonl");
  ASSERT_GT(rows.size(), 100u);
  int checked = 0;
  const size_t step = rows.size() / 3 | 1;
  for (size_t i = 0; i < rows.size(); i += step) {
    const auto& row = rows[i];
    const std::string text = row["text"];
    const std::string file = write_scratch("tok_cli_text", text);
    std::vector<std::string> args{"tokenize", "--tokenizer", dir, "-f", file, "--ids-only", "--parse-special"};
    if (!row["add_special"].get<bool>()) args.push_back("--no-add-special");
    const cli_result r = run_glia(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, ids_line(row["ids"])) << "row " << i << ": " << text;

    if (row["ids"].empty()) continue;
    const cli_result d = run_glia({"detokenize", "--tokenizer", dir, "--ids", ids_csv(row["ids"])});
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_EQ(d.out, row["decoded"].get<std::string>()) << "row " << i;
    if (row["decoded_skip_special"] != row["decoded"]) {
      const cli_result ds = run_glia({"detokenize", "--tokenizer", dir, "--skip-special", "--ids", ids_csv(row["ids"])});
      ASSERT_EQ(ds.exit_code, 0) << ds.err;
      EXPECT_EQ(ds.out, row["decoded_skip_special"].get<std::string>()) << "row " << i;
    }
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

INSTANTIATE_TEST_SUITE_P(pack, hf_folder, ::testing::Values("llama2", "llama3", "qwen3", "gemma3"));

TEST(tokenize_cli, gguf_vocab_matches_llama_cpp_with_and_without_bos) {
  const std::string model = testdata("models/brown-f32.gguf");
  const auto rows = jsonl("tokenizers/brown/expected.jsonl");
  ASSERT_EQ(rows.size(), 178u);
  for (size_t i = 0; i < rows.size(); i += 29) {
    const std::string text = rows[i]["text"];
    const auto& want = rows[i]["llama_cpp_ids"];
    const cli_result plain = run_glia({"tokenize", "-m", model, "-p", text, "--ids-only", "--no-add-special"});
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out, ids_line(want)) << text;
    // The Brown vocabulary adds BOS (id 1) and no EOS.
    const cli_result with_bos = run_glia({"tokenize", "-m", model, "-p", text, "--ids-only"});
    ASSERT_EQ(with_bos.exit_code, 0) << with_bos.err;
    nlohmann::json bos_ids = nlohmann::json::array({1});
    for (const auto& id : want) bos_ids.push_back(id);
    EXPECT_EQ(with_bos.out, ids_line(bos_ids)) << text;
  }
}

TEST(tokenize_cli, file_is_read_byte_for_byte) {
  // A trailing newline and a tab are part of the text: -f must not strip or translate anything.
  const std::string text = "The jury\tsaid\n";
  const std::string dir = testdata("tokenizers/llama3");
  const cli_result from_arg = run_glia({"tokenize", "--tokenizer", dir, "-p", text, "--ids-only"});
  const cli_result from_file =
      run_glia({"tokenize", "--tokenizer", dir, "-f", write_scratch("tok_cli_bytes", text), "--ids-only"});
  ASSERT_EQ(from_arg.exit_code, 0) << from_arg.err;
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(from_arg.out, from_file.out);
  // Llama 3 ends "\n" as its own token (198).
  EXPECT_TRUE(from_file.out.ends_with(" 198\n")) << from_file.out;
}

TEST(tokenize_cli, special_token_text_is_literal_unless_asked) {
  const std::string dir = testdata("tokenizers/llama3");
  const std::string text = "<|eot_id|>";
  const cli_result parsed = run_glia({"tokenize", "--tokenizer", dir, "-p", text, "--ids-only", "--no-add-special", "--parse-special"});
  const cli_result literal = run_glia({"tokenize", "--tokenizer", dir, "-p", text, "--ids-only", "--no-add-special"});
  ASSERT_EQ(parsed.exit_code, 0) << parsed.err;
  ASSERT_EQ(literal.exit_code, 0) << literal.err;
  EXPECT_EQ(parsed.out, "128009\n");
  EXPECT_NE(literal.out.find(' '), std::string::npos) << "plain text takes several tokens: " << literal.out;
  // The literal tokens spell the text back.
  std::string csv = literal.out.substr(0, literal.out.size() - 1);
  for (auto& c : csv)
    if (c == ' ') c = ',';
  const cli_result back = run_glia({"detokenize", "--tokenizer", dir, "--ids", csv});
  EXPECT_EQ(back.out, text);
}

TEST(tokenize_cli, default_output_lists_ids_with_their_pieces) {
  const cli_result r = run_glia({"tokenize", "--tokenizer", testdata("tokenizers/llama3"), "-p", "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // "Hello" and " world" (the reference's ids 9906, 1917; the pack's Llama 3 tokenizer.json adds no BOS).
  EXPECT_EQ(r.out, "  9906 -> 'Hello'\n  1917 -> ' world'\n");
}

TEST(tokenize_cli, bad_invocations_fail_with_a_message) {
  const std::string model = testdata("models/brown-f32.gguf");
  struct bad {
    std::vector<std::string> args;
    const char* says;
  };
  const std::vector<bad> cases = {
      {{"tokenize", "-p", "hi"}, "-m or --tokenizer"},
      {{"tokenize", "-m", model}, "-p or -f"},
      {{"tokenize", "-m", model, "--tokenizer", testdata("tokenizers/llama3"), "-p", "x"}, "excludes"},
      {{"tokenize", "--tokenizer", scratch("no_such_tokenizer_dir"), "-p", "x"}, "no_such_tokenizer_dir"},
      {{"tokenize", "--tokenizer", testdata("tokenizers/brown"), "-p", "x"}, "tokenizer.json"},
      {{"detokenize", "-m", model, "--ids", "1,x"}, "'x' is not a token id"},
      {{"detokenize", "-m", model, "--ids", "99999999999"}, "is not a token id"},
      {{"detokenize", "-m", model, "--ids", "5,-3"}, "outside the vocabulary"},
      {{"detokenize", "-m", model, "--ids", "1000000"}, "outside the vocabulary"},
  };
  for (const auto& c : cases) {
    const cli_result r = run_glia(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_NE(r.exit_code, 0) << joined;
    EXPECT_EQ(r.signal, 0) << joined;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << joined << "\n" << r.err;
  }
}

}  // namespace
}  // namespace glia::test
