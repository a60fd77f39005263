// stream_decoder on byte tokens: characters split across tokens are held back until complete, and
// ill-formed input becomes U+FFFD per the Unicode Standard's "maximal subpart" practice (ch. 3,
// "U+FFFD Substitution of Maximal Subparts", Table 3-8).
#include <gtest/gtest.h>

#include "tok_test_util.h"

namespace glia::test {
namespace {

const std::string fffd = "\xEF\xBF\xBD";

class stream : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tok_ = load_tokenizer(testdata("models/brown-f32.gguf")).release(); }
  static void TearDownTestSuite() { delete tok_; }

  // The Brown vocab has <0x00>..<0xFF> at ids 3..258 (README section 6).
  static int32_t byte_id(uint8_t b) {
    const int32_t id = 3 + b;
    EXPECT_EQ(tok_->token_text(id), fmt::format("<0x{:02X}>", b));
    return id;
  }
  // Feeds the bytes as byte tokens; returns what came out after each push, then after flush.
  static std::vector<std::string> feed(std::string_view bytes) {
    stream_decoder dec(*tok_);
    std::vector<std::string> outs;
    for (char c : bytes) outs.push_back(dec.push(byte_id(static_cast<uint8_t>(c))));
    outs.push_back(dec.flush());
    return outs;
  }
  static std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x;
    return s;
  }
  static tokenizer* tok_;
};
tokenizer* stream::tok_ = nullptr;

TEST_F(stream, four_byte_character_comes_out_whole) {
  ASSERT_NE(tok_, nullptr);
  const auto outs = feed("\xF0\x9F\xA6\x99");  // U+1F999 LLAMA
  EXPECT_EQ(outs, (std::vector<std::string>{"", "", "", "\xF0\x9F\xA6\x99", ""}));
}

TEST_F(stream, mixed_text_from_normal_and_byte_tokens) {
  ASSERT_NE(tok_, nullptr);
  // "Äpfel" is ▁ <0xC3> <0x84> p f el in this vocab (README section 6).
  const auto ids = tok_->encode("Äpfel", false);
  stream_decoder dec(*tok_, false, true);
  std::vector<std::string> outs;
  for (int32_t id : ids) outs.push_back(dec.push(id));
  EXPECT_EQ(outs, (std::vector<std::string>{"", "", "Ä", "p", "f", "el"}));
  EXPECT_EQ(dec.flush(), "");
}

TEST_F(stream, unicode_table_3_8_example) {
  ASSERT_NE(tok_, nullptr);
  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string want = "a" + fffd + fffd + fffd + "b" + fffd + "c" + fffd + fffd + "d";
  EXPECT_EQ(joined(feed(in)), want);
}

TEST_F(stream, ill_formed_sequences) {
  ASSERT_NE(tok_, nullptr);
  EXPECT_EQ(joined(feed("\xFF")), fffd);
  EXPECT_EQ(joined(feed("\xC3\x41")), fffd + "A");            // lead byte without continuation
  EXPECT_EQ(joined(feed("\xC0\xAF")), fffd + fffd);           // overlong '/'
  EXPECT_EQ(joined(feed("\xED\xA0\x80")), fffd + fffd + fffd);  // surrogate U+D800
  EXPECT_EQ(joined(feed("\xF4\x90\x80\x80")), fffd + fffd + fffd + fffd);  // above U+10FFFF
  const auto outs = feed("x\xE2\x82");  // truncated U+20AC at the end: held, then one U+FFFD
  EXPECT_EQ(outs, (std::vector<std::string>{"x", "", "", fffd}));
}

TEST_F(stream, reset_drops_pending_bytes_and_special_renders_control_tokens) {
  ASSERT_NE(tok_, nullptr);
  stream_decoder dec(*tok_, /*special=*/true);
  EXPECT_EQ(dec.push(byte_id(0xE2)), "");
  EXPECT_TRUE(dec.has_pending());
  dec.reset();
  EXPECT_FALSE(dec.has_pending());
  EXPECT_EQ(dec.push(tok_->bos()), "<s>");
  EXPECT_EQ(dec.flush(), "");
}

}  // namespace
}  // namespace glia::test
