// llama.cpp's own vocab tests (tokenizers/llama.cpp-vocab): every .inp/.out case of the SentencePiece
// and BPE vocabularies must match exactly (add_special = false, parse_special = false).
#include <gtest/gtest.h>

#include "tok_test_util.h"

namespace glia::test {
namespace {

class spm_vocab : public ::testing::TestWithParam<std::string> {};

TEST_P(spm_vocab, all_cases_match_llama_cpp) {
  auto tok = load_vocab_gguf(GetParam());
  ASSERT_NE(tok, nullptr);
  const auto cases = read_vocab_cases(GetParam());
  ASSERT_EQ(cases.size(), 46u);  // README: 46/46 per vocabulary
  int passed = 0;
  for (const auto& c : cases) {
    const auto got = tok->encode(c.text, false, false);
    EXPECT_EQ(got, c.ids) << "text: '" << c.text << "'\n got " << ids_str(got) << "\nwant " << ids_str(c.ids);
    passed += got == c.ids;
  }
  EXPECT_EQ(passed, static_cast<int>(cases.size()));
}

// SentencePiece with byte fallback is lossless: the expected ids decode back to the input.
TEST_P(spm_vocab, expected_ids_decode_to_the_input) {
  auto tok = load_vocab_gguf(GetParam());
  ASSERT_NE(tok, nullptr);
  for (const auto& c : read_vocab_cases(GetParam())) EXPECT_EQ(tok->decode(c.ids), c.text);
}

std::string vocab_param_name(const ::testing::TestParamInfo<std::string>& info);

INSTANTIATE_TEST_SUITE_P(llama_cpp, spm_vocab, ::testing::Values("llama-spm", "phi-3"), vocab_param_name);

std::string vocab_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (auto& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

class bpe_vocab : public ::testing::TestWithParam<std::string> {};

TEST_P(bpe_vocab, all_cases_match_llama_cpp) {
  auto tok = load_vocab_gguf(GetParam());
  ASSERT_NE(tok, nullptr);
  const auto cases = read_vocab_cases(GetParam());
  ASSERT_EQ(cases.size(), 46u);
  int passed = 0;
  for (const auto& c : cases) {
    const auto got = tok->encode(c.text, false, false);
    EXPECT_EQ(got, c.ids) << "text: '" << c.text << "'\n got " << ids_str(got) << "\nwant " << ids_str(c.ids);
    passed += got == c.ids;
  }
  EXPECT_EQ(passed, static_cast<int>(cases.size()));
}

// Byte-level BPE is lossless on well-formed text: the pieces of the expected ids concatenate to the
// input (llama.cpp's detokenize also cleans up spaces, so pieces are compared, not decode()).
TEST_P(bpe_vocab, expected_ids_pieces_give_the_input) {
  auto tok = load_vocab_gguf(GetParam());
  ASSERT_NE(tok, nullptr);
  for (const auto& c : read_vocab_cases(GetParam())) {
    std::string text;
    for (int32_t id : c.ids) text += tok->token_to_piece(id);
    EXPECT_EQ(text, c.text);
  }
}

INSTANTIATE_TEST_SUITE_P(llama_cpp, bpe_vocab,
                         ::testing::Values("deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "mpt", "refact",
                                           "starcoder"),
                         vocab_param_name);

// WordPiece (bert) is not supported: loading fails with an error naming the key and the model, never
// crashes or half-loads.
TEST(unsupported_vocab, bert_rejected_with_clear_error) {
  const std::string path = decompressed("tokenizers/llama.cpp-vocab/ggml-vocab-bert-bge.gguf.xz");
  auto f = gguf::file::open(path);
  ASSERT_TRUE(f.is_ok()) << f.message();
  auto t = tokenizer::from_gguf(**f);
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.message().find("tokenizer.ggml.model"), std::string::npos) << t.message();
  EXPECT_NE(t.message().find("bert"), std::string::npos) << t.message();
}

}  // namespace
}  // namespace glia::test
