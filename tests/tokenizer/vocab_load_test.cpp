// Loading small hand-built vocabularies: a valid one tokenizes as the SPM rules say, and each kind of
// malformed tokenizer.ggml.* metadata gives an error naming the key and the value.
#include <gtest/gtest.h>

#include "tok_test_util.h"

namespace glia::test {
namespace {

const std::string mark = "\xE2\x96\x81";  // "▁"

// <unk> <s> </s> <0x41> ▁ a ▁a b
gguf::writer small_vocab() {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0x41>", mark, "a", mark + "a", "b"});
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, 0, -1, -2, -3, -4});
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1});
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  return w;
}

struct loaded {
  std::vector<uint8_t> bytes;  // must outlive the file
  result<std::unique_ptr<tokenizer>> tok = error{"not loaded"};
};

loaded load(const gguf::writer& w) {
  loaded out;
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.is_ok()) << bytes.message();
  if (!bytes) return out;
  out.bytes = std::move(bytes).value();
  auto f = gguf::file::from_memory(out.bytes);
  EXPECT_TRUE(f.is_ok()) << f.message();
  if (!f) return out;
  out.tok = tokenizer::from_gguf(**f);
  return out;
}

// Expects loading to fail with a message that contains every one of `parts`.
void expect_error(const gguf::writer& w, std::initializer_list<std::string> parts) {
  auto l = load(w);
  ASSERT_FALSE(l.tok.is_ok()) << "loaded although malformed";
  for (const auto& p : parts) EXPECT_NE(l.tok.message().find(p), std::string::npos) << l.tok.message();
}

TEST(vocab_load, small_valid_vocab) {
  auto l = load(small_vocab());
  ASSERT_TRUE(l.tok.is_ok()) << l.tok.message();
  const tokenizer& t = **l.tok;
  EXPECT_EQ(t.n_vocab(), 8);
  EXPECT_TRUE(t.add_bos());  // SPM default without add_bos_token
  EXPECT_EQ(t.encode("a", false), (std::vector<int32_t>{6}));           // "▁a"
  EXPECT_EQ(t.encode("a", true), (std::vector<int32_t>{1, 6}));
  EXPECT_EQ(t.encode("ab", false), (std::vector<int32_t>{6, 7}));
  EXPECT_EQ(t.encode("A", false), (std::vector<int32_t>{4, 3}));        // ▁ then byte <0x41>
  EXPECT_EQ(t.encode("c", false), (std::vector<int32_t>{4, 0}));        // no byte token: <unk>
  EXPECT_EQ(t.encode("", true), (std::vector<int32_t>{1}));
  EXPECT_EQ(t.encode("", false), (std::vector<int32_t>{}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{6, 7, 3}), "abA");
}

// Merges follow scores, not length: with "▁a" scored below "ab", "▁ab" becomes ▁ + ab.
TEST(vocab_load, highest_score_merges_first) {
  auto w = small_vocab();
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0x41>", mark, "a", mark + "a", "ab"});
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, 0, -1, -2, -3, -0.5f});
  auto l = load(w);
  ASSERT_TRUE(l.tok.is_ok()) << l.tok.message();
  EXPECT_EQ((*l.tok)->encode("ab", false), (std::vector<int32_t>{4, 7}));
  // Equal scores: the leftmost pair merges first. "▁aab" has candidates ▁a and ab (both -3): ▁a
  // merges, then ab.
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, 0, -1, -2, -3, -3});
  auto l2 = load(w);
  ASSERT_TRUE(l2.tok.is_ok()) << l2.tok.message();
  EXPECT_EQ((*l2.tok)->encode("aab", false), (std::vector<int32_t>{6, 7}));
  EXPECT_EQ((*l2.tok)->encode("ab", false), (std::vector<int32_t>{6, 0}));  // ▁a, then "b" -> <unk>
}

TEST(vocab_load, flags_from_metadata) {
  auto w = small_vocab();
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_bool("tokenizer.ggml.add_eos_token", true);
  auto l = load(w);
  ASSERT_TRUE(l.tok.is_ok()) << l.tok.message();
  EXPECT_EQ((*l.tok)->encode("a", true), (std::vector<int32_t>{5, 2}));
  EXPECT_EQ((*l.tok)->decode(std::vector<int32_t>{4, 5}), " a");  // no prefix, so no space removed
}

TEST(vocab_load, none_sentinel_ids_keep_defaults) {
  auto w = small_vocab();
  w.set_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);  // as stories260K.gguf stores it
  w.set_u32("tokenizer.ggml.bos_token_id", 0xFFFFFFFFu);
  auto l = load(w);
  ASSERT_TRUE(l.tok.is_ok()) << l.tok.message();
  EXPECT_EQ((*l.tok)->pad(), -1);
  EXPECT_EQ((*l.tok)->bos(), 1);
}

TEST(vocab_load, array_length_mismatch) {
  auto w = small_vocab();
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0});
  expect_error(w, {"tokenizer.ggml.scores", "3", "8"});
  w = small_vocab();
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1, 1});
  expect_error(w, {"tokenizer.ggml.token_type", "9", "8"});
}

std::string type_name(gguf::value_type t) { return std::string(gguf::value_type_name(t)); }

TEST(vocab_load, wrong_element_types) {
  auto w = small_vocab();
  w.set_f32_array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 1, 1, 1});
  expect_error(w, {"tokenizer.ggml.token_type", "array of " + type_name(gguf::value_type::f32)});
  w = small_vocab();
  w.set_i32_array("tokenizer.ggml.tokens", {1, 2, 3});
  expect_error(w, {"tokenizer.ggml.tokens", "array of " + type_name(gguf::value_type::i32)});
  w = small_vocab();
  w.set_string_array("tokenizer.ggml.scores", {"a", "b", "c", "d", "e", "f", "g", "h"});
  expect_error(w, {"tokenizer.ggml.scores", "array of " + type_name(gguf::value_type::string)});
  w = small_vocab();
  w.set_string("tokenizer.ggml.scores", "x");
  expect_error(w, {"tokenizer.ggml.scores", "array"});
  w = small_vocab();
  w.set_string("tokenizer.ggml.add_bos_token", "yes");
  expect_error(w, {"tokenizer.ggml.add_bos_token", "bool"});
  w = small_vocab();
  w.set_string("tokenizer.ggml.bos_token_id", "1");
  expect_error(w, {"tokenizer.ggml.bos_token_id", "integer"});
}

TEST(vocab_load, malformed_byte_tokens) {
  for (std::string bad : {"<0xZZ>", "<0x4>", "<0x411>", "0x41", "<0x4G>"}) {
    auto w = small_vocab();
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", bad, mark, "a", mark + "a", "b"});
    expect_error(w, {"tokenizer.ggml.tokens[3]", bad, "<0xNN>"});
  }
}

TEST(vocab_load, special_ids_outside_vocab) {
  auto w = small_vocab();
  w.set_u32("tokenizer.ggml.bos_token_id", 8);
  expect_error(w, {"tokenizer.ggml.bos_token_id", "8", "n_vocab 8"});
  w = small_vocab();
  w.set_u32("tokenizer.ggml.eos_token_id", 100000);
  expect_error(w, {"tokenizer.ggml.eos_token_id", "100000"});
  w = small_vocab();
  w.set_i32("tokenizer.ggml.unknown_token_id", -7);
  expect_error(w, {"tokenizer.ggml.unknown_token_id", "-7"});
}

TEST(vocab_load, other_malformations) {
  auto w = small_vocab();
  w.remove("tokenizer.ggml.tokens");
  expect_error(w, {"tokenizer.ggml.tokens", "missing"});
  w = small_vocab();
  w.remove("tokenizer.ggml.model");
  expect_error(w, {"tokenizer.ggml.model", "missing"});
  w = small_vocab();
  w.set_string("tokenizer.ggml.model", "gpt2");  // byte-level BPE needs its merge list
  expect_error(w, {"tokenizer.ggml.merges", "missing"});
  w = small_vocab();
  w.set_string("tokenizer.ggml.model", "bert");  // WordPiece is not supported
  expect_error(w, {"tokenizer.ggml.model", "bert"});
  w = small_vocab();
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0x41>", mark, "a", "a", "b"});
  expect_error(w, {"duplicate", "'a'", "5", "6"});
  w = small_vocab();
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1, 9, 1, 1});
  expect_error(w, {"tokenizer.ggml.token_type[5]", "9"});
  w = small_vocab();
  w.set_string_array("tokenizer.ggml.tokens", {});
  w.remove("tokenizer.ggml.scores");
  w.remove("tokenizer.ggml.token_type");
  expect_error(w, {"tokenizer.ggml.tokens", "empty"});
  w = small_vocab();
  w.remove("tokenizer.ggml.bos_token_id");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>"});
  w.set_f32_array("tokenizer.ggml.scores", {0});
  w.set_i32_array("tokenizer.ggml.token_type", {2});
  w.remove("tokenizer.ggml.eos_token_id");
  expect_error(w, {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id"});  // default 1 is outside
}

}  // namespace
}  // namespace glia::test
