// Differential goldens on strings that are NOT in the test pack: tests/tokenizer/diff/<name>.jsonl,
// written by gen_expected.cjs from the reference the pack came from (transformers.js tokenizers,
// @lenml/tokenizers 3.7.2), for the pack's four tokenizer.json folders. 300 seeded strings (scripts,
// emoji ZWJ sequences, combining marks, digit runs, contractions, whitespace runs, special-token
// text, very long words) x add_special x parse_special; each row also holds the reference's decode
// of the ids with and without skip_special_tokens.
#include <gtest/gtest.h>

#include <filesystem>

#include "tok_test_util.h"

namespace glia::test {
namespace {

std::vector<nlohmann::json> diff_rows(const std::string& name) {
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path();
  return read_jsonl((here / "diff" / (name + ".jsonl")).string());
}

class hf_diff : public ::testing::TestWithParam<std::string> {};

TEST_P(hf_diff, encode_decode_match_reference) {
  const tokenizer* tok = hf_pack_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  const auto rows = diff_rows(GetParam());
  EXPECT_EQ(rows.size(), 1200u);  // 300 strings x add_special x parse_special
  int bad = 0;
  for (const auto& row : rows) {
    const std::string text = row["text"];
    const bool add_special = row["add_special"], parse_special = row["parse_special"];
    const auto want = row["ids"].get<std::vector<int32_t>>();
    const auto got = tok->encode(text, add_special, parse_special);
    const std::string where = "text " + nlohmann::json(text).dump() + " add_special " + std::to_string(add_special) +
                              " parse_special " + std::to_string(parse_special);
    EXPECT_EQ(got, want) << where << "\n got " << ids_str(got) << "\nwant " << ids_str(want);
    const std::string dec = tok->decode(want, {.special = true});
    const std::string dec_skip = tok->decode(want, {.special = false});
    EXPECT_EQ(dec, row["decoded"].get<std::string>()) << where << " ids " << ids_str(want);
    EXPECT_EQ(dec_skip, row["decoded_skip_special"].get<std::string>()) << where << " ids " << ids_str(want);
    bad += got != want || dec != row["decoded"] || dec_skip != row["decoded_skip_special"];
  }
  EXPECT_EQ(bad, 0);
}

// Streaming the ids one by one ends with decode()'s text and never shows a broken character.
TEST_P(hf_diff, stream_decoder_matches_reference) {
  const tokenizer* tok = hf_pack_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  for (const auto& row : diff_rows(GetParam())) {
    if (!row["parse_special"].get<bool>()) continue;
    const auto ids = row["ids"].get<std::vector<int32_t>>();
    const std::string want = row["decoded"];
    stream_decoder dec(*tok, /*special=*/true, /*strip_leading_space=*/true);
    std::string so_far;
    for (int32_t id : ids) so_far += dec.push(id);
    so_far += dec.flush();
    EXPECT_EQ(so_far, want) << ids_str(ids);
  }
}

// A raw stream (generation under a grammar) is the concatenated pieces the grammar checked: no
// clean-up of " 's" or " ," even where the tokenizer asks for it (Llama 3's config does).
TEST_P(hf_diff, raw_stream_is_the_pieces) {
  const tokenizer* tok = hf_pack_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  const auto ids = tok->encode("it 's here , isn 't it ?", false, false);
  stream_decoder raw(*tok, false, false, /*raw=*/true);
  std::string streamed, pieces;
  for (int32_t id : ids) {
    streamed += raw.push(id);
    pieces += tok->token_to_piece(id, false);
  }
  streamed += raw.flush();
  EXPECT_EQ(streamed, pieces);
  // Where the tokenizer cleans up, the ordinary stream differs: the case the raw one exists for.
  if (tok->vocab().pipeline.cleanup != tok::cleanup_style::none) {
    stream_decoder cleaned(*tok);
    std::string text;
    for (int32_t id : ids) text += cleaned.push(id);
    EXPECT_NE(text + cleaned.flush(), pieces);
  }
}

INSTANTIATE_TEST_SUITE_P(reference, hf_diff, ::testing::Values("llama2", "llama3", "qwen3", "gemma3"));

}  // namespace
}  // namespace glia::test
