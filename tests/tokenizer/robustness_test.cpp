// Inputs that stress the SPM merge loop and byte fallback: long runs of one character (the loop must
// stay O(n log n), no recursion depth proportional to the input) and arbitrary bytes, including
// ill-formed UTF-8. SentencePiece with byte fallback is lossless, so decode(encode(x)) == x.
#include <gtest/gtest.h>

#include "core/utf8_encode.h"

#include <cstdio>
#include <random>

#include "tok_test_util.h"

namespace glia::test {
namespace {

void check_long(const tokenizer& tok, const std::string& unit, size_t n) {
  std::string text;
  for (size_t i = 0; i < n; ++i) text += unit;
  const double t0 = thread_cpu_seconds();  // CPU time: a loaded runner must not fail the bound
  const auto ids = tok.encode(text, true);
  const double s = thread_cpu_seconds() - t0;
  std::printf("%zu x %zu-byte character: %zu ids in %.3f s of CPU\n", n, unit.size(), ids.size(), s);
  EXPECT_LT(s, 2.0) << n << " x '" << unit << "' took " << s << " s";
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), tok.bos());
  EXPECT_LE(ids.size(), text.size() + 2);  // at worst BOS, "▁" and one byte token per byte
  EXPECT_EQ(tok.decode(ids, {.remove_special = true}), " " + text);  // the space after BOS stays
}

TEST(robustness, hundred_thousand_identical_characters) {
  auto tok = load_vocab_gguf("llama-spm");
  ASSERT_NE(tok, nullptr);
  check_long(*tok, "a", 100000);
  check_long(*tok, " ", 100000);
  check_long(*tok, "\xC3\xA9", 100000);       // é: a vocabulary character
  check_long(*tok, "\xF0\x9F\xA6\x99", 100000);  // 🦙: byte fallback
}

std::string utf8(uint32_t cp) {
  std::string s;
  append_utf8(cp, s);
  return s;
}

// Well-formed UTF-8 round-trips exactly (except a literal U+2581, which SPM reads back as a space).
TEST(robustness, random_text_round_trips) {
  auto tok = load_vocab_gguf("llama-spm");
  ASSERT_NE(tok, nullptr);
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    EXPECT_EQ(tok->decode(tok->encode(s, false)), s) << "byte " << b;
  }
  std::mt19937 rng(1234);
  const uint32_t limits[] = {0x80, 0x800, 0x10000, 0x110000};
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    for (int n = rng() % 16; n > 0; --n) {
      uint32_t cp = rng() % limits[rng() % 4];
      if ((cp >= 0xD800 && cp < 0xE000) || cp == 0x2581) cp = ' ';
      s += utf8(cp);
    }
    const auto ids = tok->encode(s, false);
    EXPECT_EQ(tok->decode(ids), s) << ids_str(ids);
  }
}

// Arbitrary bytes never crash and give ids inside the vocabulary. (Not lossless: like llama.cpp, the
// splitter trusts lead bytes, so a truncated sequence can swallow part of the next "▁".)
TEST(robustness, arbitrary_bytes_give_valid_ids) {
  auto tok = load_vocab_gguf("llama-spm");
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 24, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 4 == 0 ? ' ' : rng() % 256);
    for (bool parse_special : {false, true}) {
      const auto ids = tok->encode(s, true, parse_special);
      ASSERT_FALSE(ids.empty());
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->n_vocab());
    }
  }
}

}  // namespace
}  // namespace glia::test
