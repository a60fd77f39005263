// Hostile tokenizer.json / tokenizer_config.json texts, loaded from memory (tokenizer::from_hf_json):
// each is refused with its one-line message naming the member at fault, never a crash, a hang or an
// allocation sized by the input. A minimal valid file is the base; each case breaks one thing.
#include <gtest/gtest.h>

#include <string>

#include "tokenizer/tokenizer.h"

namespace glia::test {
namespace {

struct json_case {
  const char* name;
  std::string tokenizer_json;
  std::string config_json;
  std::string error;
};

// A byte-fallback BPE with three merges: what each case below starts from.
std::string tok_json(std::string model = R"("vocab": {"<unk>": 0, "<s>": 1, "a": 2, "b": 3, "ab": 4}, "merges": ["a b"])",
                     std::string rest = "") {
  return R"({"version": "1.0", "added_tokens": [{"id": 1, "content": "<s>", "special": true}],)" + rest +
         R"( "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": false, )" + model + "}}";
}

std::vector<json_case> cases() {
  std::string deep = R"({"normalizer": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  return {
      {"empty", "", "", "tokenizer.json: JSON at byte 0: expected '{'"},
      {"not_an_object", "[1, 2]", "", "tokenizer.json: JSON at byte 0: expected '{'"},
      {"truncated", tok_json().substr(0, 40), "", "tokenizer.json: JSON at byte 37: unterminated string"},
      {"nested_100k_deep", deep, "", "tokenizer.json: JSON at byte 527: arrays/objects nest deeper than 512"},
      {"model_missing", R"({"version": "1.0"})", "", "tokenizer.json: \"model\" is missing"},
      {"model_unigram", tok_json(R"("vocab": [["a", 0.0]])").replace(tok_json().find("BPE"), 3, "Unigram"), "",
       "model.type = 'Unigram': unsupported (supported: BPE)"},
      {"vocab_missing", tok_json(R"("merges": [])"), "", "model.vocab: missing"},
      {"vocab_empty", R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})", "", "model.vocab: is empty"},
      {"vocab_negative_id", tok_json(R"("vocab": {"a": -1})"), "", "model.vocab: id -1 of 'a' is outside 0..16777215"},
      {"vocab_id_past_limit", tok_json(R"("vocab": {"a": 4000000000})"), "",
       "model.vocab: id 4000000000 of 'a' is outside 0..16777215"},
      {"vocab_mostly_holes", tok_json(R"("vocab": {"<unk>": 0, "<s>": 1, "a": 5000})"), "",
       "model.vocab: ids up to 5000 but only 3 tokens"},
      {"vocab_id_twice", tok_json(R"("vocab": {"<unk>": 0, "<s>": 1, "a": 1})"), "",
       "model.vocab: id 1 is both '<s>' and 'a'"},
      {"added_token_id_string", tok_json(), "", ""},  // placeholder replaced below
      {"unknown_normalizer", tok_json(R"("vocab": {"<unk>": 0, "<s>": 1})", R"( "normalizer": {"type": "Frobnicate"},)"), "",
       "normalizer type 'Frobnicate' is not supported"},
      {"unknown_decoder", tok_json(R"("vocab": {"<unk>": 0, "<s>": 1})", R"( "decoder": {"type": "Frobnicate"},)"), "",
       "decoder type 'Frobnicate' is not supported"},
      {"post_processor_unknown_token",
       tok_json(R"("vocab": {"<unk>": 0, "<s>": 1})",
                R"( "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}},)"),
       "", "post_processor: special token '<bos>' is not in the vocabulary"},
      {"config_not_an_object", tok_json(), "[]", "tokenizer_config.json: not a JSON object"},
      {"config_bos_missing", tok_json(), R"({"add_bos_token": true, "bos_token": "<nope>"})",
       "tokenizer_config.json: add_bos_token is true but bos_token is not a token"},
  };
}

TEST(bad_tokenizer_json, base_file_loads) {
  auto t = tokenizer::from_hf_json(tok_json(), "");
  ASSERT_TRUE(t.is_ok()) << t.message();
  EXPECT_EQ((*t)->n_vocab(), 5);
}

TEST(bad_tokenizer_json, each_case_fails_with_its_line) {
  for (auto c : cases()) {
    if (std::string(c.name) == "added_token_id_string") {
      c.tokenizer_json = R"({"added_tokens": [{"id": "1", "content": "<s>"}], "model": {"type": "BPE", "vocab": {"a": 0}}})";
      c.error = "added_tokens[0]: \"id\" must be an integer";
    }
    SCOPED_TRACE(c.name);
    auto t = tokenizer::from_hf_json(c.tokenizer_json, c.config_json);
    EXPECT_FALSE(t.is_ok());
    if (t.is_ok()) continue;
    EXPECT_EQ(t.message(), c.error);
    EXPECT_EQ(t.message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace glia::test
