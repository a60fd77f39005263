// Special tokens in the input (parse_special), BOS/EOS handling and the leading-space rule of decode.
// Expected ids are assembled from llama.cpp's .out ids for the plain-text parts, following
// llama.cpp's rule that plain text after a special token gets the SPM space prefix again.
#include <gtest/gtest.h>

#include <map>

#include "tok_test_util.h"

namespace glia::test {
namespace {

class special_tokens : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& name : {"llama-spm", "phi-3"})
      for (const auto& c : read_vocab_cases(name)) ids_[name][c.text] = c.ids;
  }
  const std::vector<int32_t>& ids(const std::string& vocab, const std::string& text) {
    auto& m = ids_[vocab];
    EXPECT_TRUE(m.count(text)) << "no llama.cpp case for '" << text << "'";
    return m[text];
  }
  std::map<std::string, std::map<std::string, std::vector<int32_t>>> ids_;
};

TEST_F(special_tokens, control_tokens_are_matched_only_with_parse_special) {
  auto tok = load_vocab_gguf("llama-spm");
  ASSERT_NE(tok, nullptr);
  const std::vector<int32_t> bos{1}, eos{2}, unk{0};
  EXPECT_EQ(tok->encode("<s>Hello world", false, true), concat(bos, ids("llama-spm", "Hello world")));
  EXPECT_EQ(tok->encode("Hello world</s>", false, true), concat(ids("llama-spm", "Hello world"), eos));
  EXPECT_EQ(tok->encode("Hello world<s>Hello world", false, true),
            concat(ids("llama-spm", "Hello world"), bos, ids("llama-spm", "Hello world")));
  EXPECT_EQ(tok->encode("<unk>", false, true), unk);
  // The text after a special token keeps its own space: " Hello" after the prefix is "▁▁Hello".
  EXPECT_EQ(tok->encode("<s> Hello", false, true), concat(bos, ids("llama-spm", " Hello")));
  // add_special adds a BOS even when the text starts with one (llama.cpp only warns).
  EXPECT_EQ(tok->encode("<s>Hello", true, true), concat(bos, bos, ids("llama-spm", "Hello")));

  for (const char* text : {"<s>Hello world", "Hello world</s>", "<unk>"}) {
    const auto plain = tok->encode(text, false, false);
    for (int32_t id : plain) EXPECT_GT(id, 2) << text << " -> " << ids_str(plain);
  }
}

TEST_F(special_tokens, phi3_special_tokens_eat_following_whitespace) {
  auto tok = load_vocab_gguf("phi-3");
  ASSERT_NE(tok, nullptr);
  ASSERT_EQ(tok->token_text(32010), "<|user|>");
  ASSERT_EQ(tok->token_text(32007), "<|end|>");
  const std::vector<int32_t> user{32010}, end{32007};
  EXPECT_EQ(tok->encode("<|user|>\nHello", false, true), concat(user, ids("phi-3", "Hello")));
  EXPECT_EQ(tok->encode("<|user|>   Hello world<|end|>\n", false, true),
            concat(user, ids("phi-3", "Hello world"), end));
}

TEST_F(special_tokens, end_of_generation_ids) {
  auto spm = load_vocab_gguf("llama-spm");
  ASSERT_NE(spm, nullptr);
  EXPECT_TRUE(spm->is_eog(2));
  EXPECT_FALSE(spm->is_eog(1));
  EXPECT_FALSE(spm->is_eog(0));
  EXPECT_FALSE(spm->is_eog(-1));

  auto phi3 = load_vocab_gguf("phi-3");
  ASSERT_NE(phi3, nullptr);
  EXPECT_EQ(phi3->eos(), 32000);  // tokenizer.ggml.eos_token_id of the file
  EXPECT_TRUE(phi3->is_eog(32000));
  EXPECT_TRUE(phi3->is_eog(32007));  // <|end|>, found by its text as llama.cpp does
  EXPECT_FALSE(phi3->is_eog(32010));
}

TEST_F(special_tokens, decode_keeps_the_space_after_bos) {
  auto tok = load_vocab_gguf("llama-spm");
  ASSERT_NE(tok, nullptr);
  const auto hello = ids("llama-spm", "Hello world");
  const auto with_bos = concat(std::vector<int32_t>{1}, hello, std::vector<int32_t>{2});
  EXPECT_EQ(tok->decode(hello), "Hello world");
  // llama_detokenize: only the first token loses its space, and BOS is that first token.
  EXPECT_EQ(tok->decode(with_bos), " Hello world");
  EXPECT_EQ(tok->decode(with_bos, {.special = true}), "<s> Hello world</s>");
  EXPECT_EQ(tok->decode(with_bos, {.special = true, .remove_special = true}), " Hello world</s>");
  EXPECT_EQ(tok->decode(std::vector<int32_t>{}), "");
}

TEST_F(special_tokens, token_to_piece_of_llama2_vocab) {
  auto tok = load_vocab_gguf("llama-spm");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 32000);
  EXPECT_EQ(tok->token_text(15043), "\xE2\x96\x81Hello");  // "▁Hello" = 15043 (pack README)
  EXPECT_EQ(tok->token_to_piece(15043), " Hello");
  EXPECT_EQ(tok->token_text(3 + 0x41), "<0x41>");
  EXPECT_EQ(tok->token_to_piece(3 + 0x41), "A");
  EXPECT_EQ(tok->token_to_piece(2), "");
  EXPECT_EQ(tok->token_to_piece(2, true), "</s>");
}

}  // namespace
}  // namespace glia::test
