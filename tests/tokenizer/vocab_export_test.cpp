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
#include "gguf/hf_keys.h"
#include "tokenizer/chat_template_export.h"
#include "tokenizer/jinja/chat_template.h"
#include "tokenizer/vocab_export.h"
#include "tokenizer/vocab_hf.h"

namespace glia::test {
namespace {

// The vocabulary of `v` as written for llama.cpp, loaded back from those keys alone.
std::unique_ptr<tokenizer> through_ggml_keys(const tok::vocab& v, int64_t n_rows, gguf::writer& w,
                                             const tok::checkpoint_ids& ids = {}) {
  status s = tok::write_ggml_vocab(v, n_rows, ids, w);
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
  // Token kinds: the reference's control and user-defined tokens, except those llama.cpp's loader
  // makes control tokens by their text: those that end generation there, and the fill-in-the-middle
  // markers.
  std::vector<int32_t> promoted_ids;
  for (int32_t id = 0; id < hf->n_vocab(); ++id) {
    EXPECT_EQ(t->vocab().has(id, tok::token_attr::user_defined), hf->vocab().has(id, tok::token_attr::user_defined)) << id;
    if (t->is_control(id) == hf->is_control(id)) continue;
    if (id == hf->unk()) {  // a control token in tokenizer.json, llama.cpp's unknown type
      EXPECT_EQ(t->vocab().tokens[size_t(id)].attr, tok::token_attr::unknown);
      continue;
    }
    const auto& v = t->vocab();
    const bool fim_marker = id == v.fim_pre || id == v.fim_suf || id == v.fim_mid;
    EXPECT_TRUE(t->is_control(id) && (t->is_eog(id) || fim_marker)) << id << " " << t->token_text(id);
    promoted_ids.push_back(id);
  }
  int passed = 0, not_nfc = 0, promoted = 0, decoded = 0;
  for (const auto& row : rows) {
    const std::string text = row["text"];
    const bool add_special = row["add_special"];
    const auto want = row["ids"].get<std::vector<int32_t>>();
    // Decoding, but for llama.cpp's own differences: it keeps the space after a BOS that SentencePiece's
    // prefix put there, and drops the promoted tokens as control tokens.
    const bool bos_first = !want.empty() && want.front() == t->bos();
    const bool has_promoted_id = std::any_of(want.begin(), want.end(), [&](int32_t id) {
      return std::find(promoted_ids.begin(), promoted_ids.end(), id) != promoted_ids.end();
    });
    if (!bos_first && !has_promoted_id) {
      ++decoded;
      EXPECT_EQ(t->decode(want, {.special = true}), row["decoded"]) << ids_str(want);
      EXPECT_EQ(t->decode(want, {.special = false}), row["decoded_skip_special"]) << ids_str(want);
    }
    const auto got = t->encode(text, add_special, /*parse_special=*/true);
    if (got == want) {
      ++passed;
      continue;
    }
    // llama.cpp's own differences: the text as NFC, or the promoted texts as plain text, tokenize as
    // the reference.
    const bool has_promoted = std::any_of(promoted_ids.begin(), promoted_ids.end(),
                                          [&](int32_t id) { return text.find(t->token_text(id)) != std::string::npos; });
    if (nfc(text) != text && t->encode(nfc(text), add_special, true) == want) {
      ++not_nfc;
    } else if (has_promoted && t->encode(text, add_special, /*parse_special=*/false) == want) {
      ++promoted;
    } else {
      ADD_FAILURE() << "text: '" << text << "' add_special " << add_special << "\n got " << ids_str(got) << "\nwant "
                    << ids_str(want);
    }
  }
  EXPECT_GE(decoded, 170);  // the rows without a BOS
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

// A SentencePiece-style vocabulary as small as the checks need; the parts of tokenizer.json given
// are spliced in.
struct spm_parts {
  std::string normalizer = "null", pre_tokenizer = "null", post_processor = "null";
  std::string merges = R"("\u2581 a", "a b", "\u2581a b", "\u2581 ab")";
  std::string more_added{};    // ", {...}" entries of added_tokens
  int n_bytes = 256;           // <0x00>.. byte tokens
  std::string config = R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})";
};

std::unique_ptr<tokenizer> small_spm(const spm_parts& p) {
  std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
  for (int b = 0; b < 256; ++b)
    vocab += b < p.n_bytes ? fmt::format(R"(, "<0x{:02X}>": {})", b, 3 + b) : fmt::format(R"(, "x{}": {})", b, 3 + b);
  vocab += R"(, "\u2581": 259, "a": 260, "b": 261, "\u2581a": 262, "ab": 263, "\u2581ab": 264, "<m>": 265)";
  const std::string json = R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
      {"id": 2, "content": "</s>", "special": true})" + p.more_added + R"(], "normalizer": )" + p.normalizer +
                           R"(, "pre_tokenizer": )" + p.pre_tokenizer + R"(, "post_processor": )" + p.post_processor + R"(, "decoder": null,
      "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "vocab": {)" + vocab +
                           R"(}, "merges": [)" + p.merges + "]}}";
  auto t = tokenizer::from_hf_json(json, p.config);
  EXPECT_TRUE(t.is_ok()) << t.message();
  return t ? std::move(t).value() : nullptr;
}

constexpr const char* kSpmNormalizer =
    R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})";

TEST(vocab_export_small, spm_scores_follow_merge_ranks_and_pad_to_the_rows) {
  auto hf = small_spm({.normalizer = kSpmNormalizer});
  ASSERT_NE(hf, nullptr);
  gguf::writer w;
  auto t = through_ggml_keys(hf->vocab(), 300, w);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_vocab(), 300);
  EXPECT_EQ(t->token_text(299), "[PAD299]");
  EXPECT_EQ(t->vocab().tokens[299].attr, tok::token_attr::unused);
  EXPECT_EQ(t->vocab().tokens[7].attr, tok::token_attr::byte);  // <0x04>
  // "▁a" (rank 0) before "ab" (rank 1): " ab" is ▁a + b; ▁ab scores by its first merge (rank 2).
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
    status s = tok::write_ggml_vocab(hf->vocab(), 0, {}, w);
    ASSERT_FALSE(s.is_ok()) << why;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
    EXPECT_TRUE(w.metadata().empty());  // nothing half-written
  };
  // Metaspace splitting words: "▁▁" could never merge in transformers, always in llama.cpp.
  expect_refused(small_spm({.pre_tokenizer = R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true})"}).get(),
                 "splits words");
  expect_refused(small_spm({.normalizer = R"({"type": "Lowercase"})"}).get(), "normalizer");
  expect_refused(small_spm({.normalizer = kSpmNormalizer,
                            .post_processor = R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})"})
                     .get(),
                 "post-processor");
  // "▁ab" is "▁" + "ab" too: llama.cpp would join those two, tokenizer.json (without that merge) not.
  expect_refused(small_spm({.normalizer = kSpmNormalizer, .merges = R"("\u2581 a", "a b", "\u2581a b")"}).get(),
                 "'\xE2\x96\x81" "ab' (264) is spelled by the tokens '\xE2\x96\x81' and 'ab', which no merge joins");
  expect_refused(small_spm({.normalizer = kSpmNormalizer, .n_bytes = 255}).get(), "no byte token <0xFF>");
  expect_refused(small_spm({.normalizer = kSpmNormalizer, .more_added = R"(, {"id": 265, "content": "ab", "special": true})"}).get(),
                 "tokens 263 and 265 have the same text 'ab'");
  expect_refused(small_spm({.normalizer = kSpmNormalizer, .more_added = R"(, {"id": 265, "content": "<m>", "special": true, "lstrip": true})"}).get(),
                 "'<m>' (265) strips");
  // Metaspace without word splits is the SentencePiece pipeline. It adds no "▁" before a leading space
  // where llama.cpp's add_space_prefix does (as llama.cpp's conversion of such a model): the rest agrees.
  auto metaspace = small_spm({.pre_tokenizer = R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": false})"});
  ASSERT_NE(metaspace, nullptr);
  gguf::writer w;
  auto t = through_ggml_keys(metaspace->vocab(), 0, w);
  ASSERT_NE(t, nullptr);
  for (std::string text : {"ab", "a b", "ab ab", "ba", "\xC3\xA9"})
    EXPECT_EQ(t->encode(text, true), metaspace->encode(text, true)) << text;
  EXPECT_EQ(metaspace->encode(" ab", true), (std::vector<int32_t>{1, 264}));
  EXPECT_EQ(t->encode(" ab", true), (std::vector<int32_t>{1, 259, 264}));
}

// Without tokenizer_config.json the BOS is the one the post-processor adds and the EOS config.json's;
// without any EOS (llama.cpp would stop at its default id) nothing is written.
TEST(vocab_export_small, bos_and_eos_without_tokenizer_config) {
  const std::string adds_m =
      R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<m>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<m>": {"id": "<m>", "ids": [265], "tokens": ["<m>"]}}})";
  const std::string m_special = R"(, {"id": 265, "content": "<m>", "special": true})";
  auto hf = small_spm({.normalizer = kSpmNormalizer, .post_processor = adds_m, .more_added = m_special, .config = ""});
  ASSERT_NE(hf, nullptr);
  ASSERT_EQ(hf->bos(), tok::no_token);
  ASSERT_EQ(hf->eos(), tok::no_token);
  gguf::writer w;
  auto t = through_ggml_keys(hf->vocab(), 0, w, {.eos = 2});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->bos(), 265);
  EXPECT_EQ(t->eos(), 2);
  EXPECT_EQ(t->encode("ab", true), hf->encode("ab", true));
  EXPECT_EQ(t->encode("ab", true), (std::vector<int32_t>{265, 264}));
  gguf::writer none;
  status s = tok::write_ggml_vocab(hf->vocab(), 0, {}, none);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("names no EOS token"), std::string::npos) << s.message();
  // A post-processor adding something else than the BOS the tokenizer names.
  auto other = small_spm({.normalizer = kSpmNormalizer, .post_processor = adds_m, .more_added = m_special});
  ASSERT_NE(other, nullptr);
  gguf::writer w2;
  s = tok::write_ggml_vocab(other->vocab(), 0, {}, w2);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("adds a token other than its BOS"), std::string::npos) << s.message();
}

// Chat templates as the converter writes them: the default one and the named ones, names in letters,
// digits and "_"; a "default" among the named ones is the default where there is no other.
gguf::writer chat_template_keys(const std::string& config, status& s, const std::string& named_default = "") {
  gguf::writer in;
  in.set_string(std::string(gguf::key_hf_tokenizer_config), config);
  // additional_chat_templates/default.jinja of a checkpoint folder
  if (!named_default.empty()) in.set_string(std::string(gguf::key_hf_chat_template) + ".default", named_default);
  auto bytes = in.to_bytes();
  EXPECT_TRUE(bytes.is_ok());
  auto f = gguf::file::from_memory(*bytes);
  EXPECT_TRUE(f.is_ok()) << f.message();
  gguf::writer out;
  s = tok::write_ggml_chat_templates(**f, out);
  return out;
}

TEST(vocab_export_small, chat_templates_as_the_converter_writes_them) {
  status s;
  gguf::writer out = chat_template_keys(
      R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool use-\u00e9", "template": "T"}, {"name": "", "template": "E"}]})", s);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(metadata_string(out, "tokenizer.chat_template"), "D");
  EXPECT_EQ(metadata_string(out, "tokenizer.chat_template.tool_use__"), "T");  // one "_" per character
  std::vector<std::string> keys;
  for (const auto& [k, v] : out.metadata()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"tokenizer.chat_template", "tokenizer.chat_template.tool_use__", "tokenizer.chat_templates"}));
  for (const auto& [k, v] : out.metadata())
    if (k == "tokenizer.chat_templates") {
      ASSERT_TRUE(v.as_array() && v.as_array()->size() == 1);
      EXPECT_EQ(*(*v.as_array())[0].as_string(), "tool_use__");
    }
  out = chat_template_keys("{}", s, "N");
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(metadata_string(out, "tokenizer.chat_template"), "N");
  // Two names that clean to one key: refused rather than one template lost.
  chat_template_keys(R"({"chat_template": [{"name": "tool use", "template": "A"}, {"name": "tool_use", "template": "B"}]})", s);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("tokenizer.chat_template.tool_use"), std::string::npos) << s.message();
}

// Which tokenizer a file with both kinds of keys gets: the tokenizer.json and its templates when glia
// derived the ggml keys from them, else (a file another tool wrote) the ggml keys and
// tokenizer.chat_template, as before such files existed.
TEST(vocab_export_small, ggml_keys_rule_unless_derived) {
  auto small = small_spm({.normalizer = kSpmNormalizer});
  ASSERT_NE(small, nullptr);
  auto big_json = tok::read_file_maybe_gz(testdata("tokenizers/llama2/tokenizer.json.gz"));
  ASSERT_TRUE(big_json.is_ok());
  for (bool derived : {false, true}) {
    gguf::writer w;
    ASSERT_TRUE(tok::write_ggml_vocab(small->vocab(), 0, {}, w).is_ok());
    if (!derived) w.remove(gguf::key_hf_ggml_derived);
    w.set_string(std::string(gguf::key_hf_tokenizer_json), *big_json);
    w.set_string("tokenizer.chat_template", "{{ messages[0].content }}");
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.is_ok());
    auto f = gguf::file::from_memory(*bytes);
    ASSERT_TRUE(f.is_ok()) << f.message();
    auto t = tokenizer::from_gguf(**f);
    ASSERT_TRUE(t.is_ok()) << t.message();
    EXPECT_EQ((*t)->n_vocab(), derived ? 32000 : 266);
    auto templates = jinja::load_chat_templates(**f);
    ASSERT_TRUE(templates.is_ok()) << templates.message();
    EXPECT_EQ(templates->default_template, derived ? "" : "{{ messages[0].content }}");
  }
}

}  // namespace
}  // namespace glia::test
