// The Brown model's SentencePiece tokenizer against llama.cpp's ids for the pack's 178 strings
// (tokenizers/brown/expected.jsonl, README section 6).
#include <gtest/gtest.h>

#include "tok_test_util.h"

namespace glia::test {
namespace {

class brown : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tok_ = load_tokenizer(testdata("models/brown-f32.gguf")).release();
    rows_ = new std::vector<nlohmann::json>(read_jsonl(testdata("tokenizers/brown/expected.jsonl")));
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete rows_;
  }
  static tokenizer* tok_;
  static std::vector<nlohmann::json>* rows_;
};
tokenizer* brown::tok_ = nullptr;
std::vector<nlohmann::json>* brown::rows_ = nullptr;

TEST_F(brown, encode_matches_llama_cpp_on_all_178_strings) {
  ASSERT_NE(tok_, nullptr);
  ASSERT_EQ(rows_->size(), 178u);
  int passed = 0;
  for (const auto& row : *rows_) {
    const std::string text = row["text"];
    const auto want = row["llama_cpp_ids"].get<std::vector<int32_t>>();
    const auto got = tok_->encode(text, /*add_special=*/false);
    EXPECT_EQ(got, want) << "text: '" << text << "'\n got " << ids_str(got) << "\nwant " << ids_str(want);
    passed += got == want;
  }
  EXPECT_EQ(passed, 178);
}

TEST_F(brown, add_special_prepends_bos_only) {
  ASSERT_NE(tok_, nullptr);
  EXPECT_TRUE(tok_->add_bos());
  EXPECT_FALSE(tok_->add_eos());
  EXPECT_EQ(tok_->bos(), 1);  // <s> in the README's listing of the Brown vocab
  EXPECT_EQ(tok_->eos(), 2);
  for (const auto& row : *rows_) {
    const auto want = concat(std::vector<int32_t>{1}, row["llama_cpp_ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(tok_->encode(row["text"].get<std::string>(), true), want);
  }
}

TEST_F(brown, decode_round_trips) {
  ASSERT_NE(tok_, nullptr);
  int checked = 0;
  for (const auto& row : *rows_) {
    const std::string text = row["text"];
    if (row["sentencepiece_decoded"] != text) continue;
    EXPECT_EQ(tok_->decode(row["llama_cpp_ids"].get<std::vector<int32_t>>()), text);
    ++checked;
  }
  EXPECT_EQ(checked, 178);  // SentencePiece decodes every string back exactly (README section 6)
}

// Pieces of the README's example "Äpfel" -> ▁ <0xC3> <0x84> p f el.
TEST_F(brown, token_to_piece) {
  ASSERT_NE(tok_, nullptr);
  const auto ids = rows_->at(1)["llama_cpp_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(rows_->at(1)["text"], "Äpfel");
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ(tok_->token_to_piece(ids[0]), " ");
  EXPECT_EQ(tok_->token_to_piece(ids[1]), "\xC3");
  EXPECT_EQ(tok_->token_to_piece(ids[2]), "\x84");
  EXPECT_EQ(tok_->token_to_piece(ids[5]), "el");
  EXPECT_EQ(tok_->token_text(ids[1]), "<0xC3>");
  // Control tokens print only when asked to; <unk> (type 2) likewise.
  EXPECT_EQ(tok_->token_to_piece(1), "");
  EXPECT_EQ(tok_->token_to_piece(1, true), "<s>");
  EXPECT_EQ(tok_->token_to_piece(0, true), "<unk>");
  EXPECT_EQ(tok_->token_to_piece(-1), "");
  EXPECT_EQ(tok_->token_to_piece(tok_->n_vocab()), "");
}

// Every string streamed token by token: the output so far is always a prefix of the text that ends
// on a character boundary, and the whole is the text.
TEST_F(brown, stream_decoder_yields_exact_text_and_whole_characters) {
  ASSERT_NE(tok_, nullptr);
  for (const auto& row : *rows_) {
    const std::string text = row["text"];
    stream_decoder dec(*tok_, false, /*strip_leading_space=*/true);
    std::string so_far;
    for (int32_t id : row["llama_cpp_ids"].get<std::vector<int32_t>>()) {
      so_far += dec.push(id);
      ASSERT_TRUE(text.starts_with(so_far)) << "text '" << text << "' stream '" << so_far << "'";
      if (so_far.size() < text.size()) {
        EXPECT_NE(static_cast<uint8_t>(text[so_far.size()]) & 0xC0, 0x80) << "split character in '" << text << "'";
      }
    }
    EXPECT_FALSE(dec.has_pending());
    so_far += dec.flush();
    EXPECT_EQ(so_far, text);
  }
}

}  // namespace
}  // namespace glia::test
