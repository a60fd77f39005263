// Hugging Face tokenizers (tokenizers/llama2|llama3|qwen3|gemma3: tokenizer.json.gz +
// tokenizer_config.json) against the reference's goldens (expected.jsonl, README section 3): ids with and
// without special tokens, decode with and without skip_special_tokens, for all 178 strings.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>

#include "tok_test_util.h"

namespace glia::test {
namespace {

struct pack_tokenizer {
  const tokenizer* tok = nullptr;
  std::vector<nlohmann::json> rows;
};

const pack_tokenizer& get(const std::string& name) {
  static std::map<std::string, pack_tokenizer> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  pack_tokenizer p;
  p.tok = hf_pack_tokenizer(name);
  p.rows = read_jsonl(testdata("tokenizers/" + name + "/expected.jsonl"));
  return cache.emplace(name, std::move(p)).first->second;
}

class hf_golden : public ::testing::TestWithParam<std::string> {};

TEST_P(hf_golden, encode_matches_all_rows) {
  const auto& p = get(GetParam());
  ASSERT_NE(p.tok, nullptr);
  ASSERT_EQ(p.rows.size(), 356u);  // 178 strings x add_special false / true
  int passed = 0;
  for (const auto& row : p.rows) {
    const std::string text = row["text"];
    const auto want = row["ids"].get<std::vector<int32_t>>();
    const auto got = p.tok->encode(text, row["add_special"].get<bool>(), /*parse_special=*/true);
    EXPECT_EQ(got, want) << "text: '" << text << "' add_special " << row["add_special"] << "\n got " << ids_str(got)
                         << "\nwant " << ids_str(want);
    passed += got == want;
  }
  EXPECT_EQ(passed, 356);
}

TEST_P(hf_golden, decode_matches_all_rows) {
  const auto& p = get(GetParam());
  ASSERT_NE(p.tok, nullptr);
  int passed = 0;
  for (const auto& row : p.rows) {
    const auto ids = row["ids"].get<std::vector<int32_t>>();
    const std::string want = row["decoded"], want_skip = row["decoded_skip_special"];
    const std::string got = p.tok->decode(ids, {.special = true});
    const std::string got_skip = p.tok->decode(ids, {.special = false});
    EXPECT_EQ(got, want) << ids_str(ids);
    EXPECT_EQ(got_skip, want_skip) << ids_str(ids);
    passed += got == want && got_skip == want_skip;
  }
  EXPECT_EQ(passed, 356);
}

// Streaming the ids one at a time gives decode()'s text, and never a piece of a character.
TEST_P(hf_golden, stream_decoder_gives_decoded_text) {
  const auto& p = get(GetParam());
  ASSERT_NE(p.tok, nullptr);
  for (const auto& row : p.rows) {
    const auto ids = row["ids"].get<std::vector<int32_t>>();
    for (bool special : {true, false}) {
      const std::string want = row[special ? "decoded" : "decoded_skip_special"];
      stream_decoder dec(*p.tok, special, /*strip_leading_space=*/true);
      std::string so_far;
      for (int32_t id : ids) {
        so_far += dec.push(id);
        ASSERT_TRUE(want.starts_with(so_far)) << "want '" << want << "' stream '" << so_far << "'";
        if (so_far.size() < want.size()) {
          EXPECT_NE(static_cast<uint8_t>(want[so_far.size()]) & 0xC0, 0x80) << "split character in '" << want << "'";
        }
      }
      so_far += dec.flush();
      EXPECT_EQ(so_far, want) << ids_str(ids);
    }
  }
}

// With parse_special false, special-token text is plain text: no control token comes out, and text
// without any added token's text tokenizes as before.
TEST_P(hf_golden, literal_special_text_without_parse_special) {
  const auto& p = get(GetParam());
  ASSERT_NE(p.tok, nullptr);
  for (const auto& row : p.rows) {
    if (row["add_special"].get<bool>()) continue;
    const std::string text = row["text"];
    const auto with = row["ids"].get<std::vector<int32_t>>();
    const auto plain = p.tok->encode(text, false, /*parse_special=*/false);
    for (int32_t id : plain) EXPECT_FALSE(p.tok->is_control(id)) << text << " -> " << ids_str(plain);
    const bool had_control = std::any_of(with.begin(), with.end(), [&](int32_t id) { return p.tok->is_control(id); });
    if (!had_control) {
      EXPECT_EQ(plain, with) << text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(pack, hf_golden, ::testing::Values("llama2", "llama3", "qwen3", "gemma3"));

// README section 3 notes on the four tokenizers.
TEST(hf_tokenizers, special_token_conventions) {
  const auto& llama2 = get("llama2");
  const auto& llama3 = get("llama3");
  const auto& qwen3 = get("qwen3");
  const auto& gemma3 = get("gemma3");
  ASSERT_TRUE(llama2.tok && llama3.tok && qwen3.tok && gemma3.tok);
  EXPECT_EQ(llama2.tok->token_text(22557), "\xE2\x96\x81Hello");  // Mistral's vocabulary
  EXPECT_EQ(llama2.tok->encode("", true), (std::vector<int32_t>{1}));
  EXPECT_EQ(llama3.tok->encode("", true), (std::vector<int32_t>{}));  // its tokenizer.json adds no BOS
  EXPECT_EQ(qwen3.tok->encode("", true), (std::vector<int32_t>{}));
  EXPECT_EQ(gemma3.tok->encode("", true), (std::vector<int32_t>{2}));
  EXPECT_EQ(llama3.tok->decode(llama3.tok->encode("Hello ?", false)), "Hello?");  // clean_up_tokenization_spaces
  EXPECT_TRUE(llama3.tok->is_eog(llama3.tok->encode("<|eot_id|>", false, true).at(0)));
  EXPECT_TRUE(qwen3.tok->is_eog(qwen3.tok->encode("<|im_end|>", false, true).at(0)));
  EXPECT_TRUE(gemma3.tok->is_eog(gemma3.tok->encode("<end_of_turn>", false, true).at(0)));
}

// transformers' Llama and Gemma tokenizer classes rebuild the post-processor from tokenizer_config's
// add_bos_token / add_eos_token (llama.cpp's converter reads them too); other classes keep
// tokenizer.json's template. Mistral's tokenizer.json adds <s>.
TEST(hf_tokenizers, llama_class_flags_replace_the_post_processor) {
  namespace fs = std::filesystem;
  const fs::path dir = scratch("hf_flags_tokenizer");
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(testdata("tokenizers/llama2/tokenizer.json.gz"), dir / "tokenizer.json.gz");
  auto config = nlohmann::json::parse(read_text(testdata("tokenizers/llama2/tokenizer_config.json")));
  auto encode = [&](const std::string& cls, std::optional<bool> bos, std::optional<bool> eos) {
    config["tokenizer_class"] = cls;
    config.erase("add_bos_token");
    config.erase("add_eos_token");
    if (bos) config["add_bos_token"] = *bos;
    if (eos) config["add_eos_token"] = *eos;
    write_text((dir / "tokenizer_config.json").string(), config.dump());
    auto t = tokenizer::from_hf(dir.string());
    EXPECT_TRUE(t.is_ok()) << t.message();
    return t.is_ok() ? (*t)->encode("The man", true) : std::vector<int32_t>{};
  };
  const std::vector<int32_t> text = encode("LlamaTokenizerFast", false, false);
  ASSERT_FALSE(text.empty());
  EXPECT_NE(text.front(), 1);
  EXPECT_EQ(encode("LlamaTokenizerFast", false, true), concat(text, std::vector<int32_t>{2}));
  EXPECT_EQ(encode("LlamaTokenizer", std::nullopt, std::nullopt), concat(std::vector<int32_t>{1}, text));  // defaults
  EXPECT_EQ(encode("GemmaTokenizerFast", true, true), concat(std::vector<int32_t>{1}, text, std::vector<int32_t>{2}));
  // Another class: tokenizer.json's template (<s> first), whatever the flags say.
  EXPECT_EQ(encode("PreTrainedTokenizerFast", false, true), concat(std::vector<int32_t>{1}, text));
  // A config that names no BOS / EOS: the class's own (<s>, </s>), as transformers.
  config.erase("bos_token");
  config.erase("eos_token");
  EXPECT_EQ(encode("LlamaTokenizerFast", std::nullopt, true), concat(std::vector<int32_t>{1}, text, std::vector<int32_t>{2}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace glia::test
