// The pack's Hugging Face tokenizers written as llama.cpp's tokenizer.ggml.* keys (vocab_export.h) and
// read back through the GGUF loader, which runs llama.cpp's algorithms: the ids must be the
// reference's (expected.jsonl), so a converted file tokenizes in llama.cpp as transformers does,
// except where llama.cpp itself differs for every file of such a tokenizer: it runs no NFC
// normalizer (Qwen's), and its loader makes end-of-generation-looking texts ("</s>" in Qwen's
// vocabulary) control tokens, matched in the text as such.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>

#include "tok_test_util.h"
#include "tokenizer/vocab_export.h"

namespace glia::test {
namespace {

// The vocabulary of `v` as written for llama.cpp, loaded back from those keys alone.
std::unique_ptr<tokenizer> through_ggml_keys(const tok::vocab& v, int64_t n_rows, gguf::writer& w) {
  status s = tok::write_ggml_vocab(v, n_rows, w);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s) return nullptr;
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.is_ok());
  auto f = gguf::file::from_memory(*bytes);
  EXPECT_TRUE(f.is_ok()) << f.message();
  if (!f) return nullptr;
  auto t = tokenizer::from_gguf(**f);
  EXPECT_TRUE(t.is_ok()) << t.message();
  if (!t) return nullptr;
  return std::move(t).value();
}

std::string nfc(const std::string& s) {
  utf8proc_uint8_t* out = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str()));
  std::string r(reinterpret_cast<const char*>(out));
  std::free(out);
  return r;
}

std::string metadata_string(const gguf::writer& w, std::string_view key) {
  for (const auto& [k, v] : w.metadata())
    if (k == key && v.as_string()) return *v.as_string();
  return "";
}

struct export_case {
  const char* pack;
  const char* model;  // tokenizer.ggml.model
  const char* pre;    // tokenizer.ggml.pre ("" for SentencePiece)
};

class vocab_export : public ::testing::TestWithParam<export_case> {};

TEST_P(vocab_export, ggml_keys_tokenize_as_the_reference) {
  const export_case& c = GetParam();
  const tokenizer* hf = hf_pack_tokenizer(c.pack);
  ASSERT_NE(hf, nullptr);
  gguf::writer w;
  auto t = through_ggml_keys(hf->vocab(), 0, w);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(metadata_string(w, "tokenizer.ggml.model"), c.model);
  EXPECT_EQ(metadata_string(w, "tokenizer.ggml.pre"), c.pre);
  EXPECT_EQ(t->n_vocab(), hf->n_vocab());
  if (hf->bos() != tok::no_token) {
    EXPECT_EQ(t->bos(), hf->bos());  // else llama.cpp's default
  }
  EXPECT_EQ(t->eos(), hf->eos());
  const auto rows = read_jsonl(testdata(std::string("tokenizers/") + c.pack + "/expected.jsonl"));
  ASSERT_EQ(rows.size(), 356u);
  int passed = 0, not_nfc = 0, promoted = 0;
  for (const auto& row : rows) {
    const std::string text = row["text"];
    const bool add_special = row["add_special"];
    const auto want = row["ids"].get<std::vector<int32_t>>();
    const auto got = t->encode(text, add_special, /*parse_special=*/true);
    if (got == want) {
      ++passed;
      continue;
    }
    // llama.cpp's own differences: the text as NFC, or the promoted texts as plain text, tokenize as
    // the reference.
    bool has_promoted = false;
    for (int32_t id = 0; id < t->n_vocab() && !has_promoted; ++id)
      has_promoted = t->is_control(id) && !hf->is_control(id) && text.find(t->token_text(id)) != std::string::npos;
    if (nfc(text) != text && t->encode(nfc(text), add_special, true) == want) {
      ++not_nfc;
    } else if (has_promoted && t->encode(text, add_special, /*parse_special=*/false) == want) {
      ++promoted;
    } else {
      ADD_FAILURE() << "text: '" << text << "' add_special " << add_special << "\n got " << ids_str(got) << "\nwant "
                    << ids_str(want);
    }
  }
  EXPECT_EQ(passed + not_nfc + promoted, 356);
  // Only Qwen's tokenizer has an NFC normalizer, and only its vocabulary the promoted texts.
  const bool qwen = std::string_view(c.pack) == "qwen3";
  EXPECT_EQ(not_nfc > 0, qwen) << not_nfc;
  EXPECT_EQ(promoted > 0, qwen) << promoted;
  EXPECT_GE(passed, 330);
}

INSTANTIATE_TEST_SUITE_P(pack, vocab_export,
                         ::testing::Values(export_case{"llama2", "llama", ""}, export_case{"llama3", "gpt2", "llama-bpe"},
                                           export_case{"qwen3", "gpt2", "qwen2"}, export_case{"gemma3", "llama", ""}),
                         [](const auto& info) { return std::string(info.param.pack); });

// A SentencePiece-style vocabulary as small as the checks need, with `parts` spliced into tokenizer.json.
std::unique_ptr<tokenizer> small_spm(const std::string& normalizer, const std::string& pre_tokenizer,
                                     const std::string& post_processor = "null") {
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
  for (int b = 0; b < 256; ++b) vocab += fmt::format(R"(, "<0x{:02X}>": {})", b, 3 + b);
  vocab += R"(, "\u2581": 259, "a": 260, "b": 261, "\u2581a": 262, "ab": 263, "\u2581ab": 264)";
  const std::string json = R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
      {"id": 2, "content": "</s>", "special": true}], "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer +
                           R"(, "post_processor": )" + post_processor + R"(, "decoder": null,
      "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "vocab": {)" + vocab +
                           R"(}, "merges": ["\u2581 a", "a b", "\u2581a b"]}})";
  auto t = tokenizer::from_hf_json(json, R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})");
  EXPECT_TRUE(t.is_ok()) << t.message();
  return t ? std::move(t).value() : nullptr;
}

constexpr const char* kSpmNormalizer =
    R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})";

TEST(vocab_export_small, spm_scores_follow_merge_ranks_and_pad_to_the_rows) {
  auto hf = small_spm(kSpmNormalizer, "null");
  ASSERT_NE(hf, nullptr);
  gguf::writer w;
  auto t = through_ggml_keys(hf->vocab(), 300, w);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_vocab(), 300);
  EXPECT_EQ(t->token_text(299), "[PAD299]");
  EXPECT_EQ(t->vocab().tokens[299].attr, tok::token_attr::unused);
  EXPECT_EQ(t->vocab().tokens[7].attr, tok::token_attr::byte);  // <0x04>
  // "▁a" (rank 0) before "ab" (rank 1): " ab" is ▁a + b, then ▁ab (rank 2).
  EXPECT_FLOAT_EQ(t->vocab().tokens[262].score, -1.0f);
  EXPECT_FLOAT_EQ(t->vocab().tokens[263].score, -2.0f);
  EXPECT_FLOAT_EQ(t->vocab().tokens[264].score, -3.0f);
  for (std::string text : {"ab", "a b", "ab ab", "ba", "\xC3\xA9"})
    EXPECT_EQ(t->encode(text, true), hf->encode(text, true)) << text;
  EXPECT_EQ(t->encode("ab", true), (std::vector<int32_t>{1, 264}));
}

TEST(vocab_export_small, refuses_what_llama_cpp_cannot_reproduce) {
  auto expect_refused = [](const tokenizer* hf, const std::string& why) {
    ASSERT_NE(hf, nullptr);
    gguf::writer w;
    status s = tok::write_ggml_vocab(hf->vocab(), 0, w);
    ASSERT_FALSE(s.is_ok()) << why;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
    EXPECT_TRUE(w.metadata().empty());  // nothing half-written
  };
  // Metaspace splitting words: "▁▁" could never merge in transformers, always in llama.cpp.
  auto split = small_spm("null", R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true})");
  expect_refused(split.get(), "splits words");
  auto lower = small_spm(R"({"type": "Lowercase"})", "null");
  expect_refused(lower.get(), "normalizer");
  auto two_bos = small_spm(kSpmNormalizer, "null",
                           R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})");
  expect_refused(two_bos.get(), "post-processor");
  // Metaspace without word splits is the SentencePiece pipeline.
  auto metaspace = small_spm("null", R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false})");
  ASSERT_NE(metaspace, nullptr);
  gguf::writer w;
  EXPECT_TRUE(tok::write_ggml_vocab(metaspace->vocab(), 0, w).is_ok());
}

}  // namespace
}  // namespace glia::test
