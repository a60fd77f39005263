// The golden manifests (golden/*.json) store llama.cpp's tokenization of their text prompts (with
// BOS) and, for stories260K and brown, greedy continuations with their decoded text. Every model's
// tokenizer must reproduce them.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tok_test_util.h"

namespace glia::test {
namespace {

// Manifest file names; with_greedy: only those that carry greedy_continuations.
std::vector<std::string> manifests(bool with_greedy) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(testdata("golden"))) {
    if (e.path().extension() != ".json") continue;
    if (with_greedy && !nlohmann::json::parse(read_text(e.path().string())).contains("greedy_continuations"))
      continue;
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string manifest_param_name(const ::testing::TestParamInfo<std::string>& info) {
  return test::param_name(info.param.substr(0, info.param.size() - 5));
}

class golden_manifest : public ::testing::TestWithParam<std::string> {};

// A prompt's text is either the whole tokenized text or "<text> (first N tokens)" when the ids were
// cut to N.
TEST_P(golden_manifest, text_prompts_encode_to_stored_ids) {
  const auto m = nlohmann::json::parse(read_text(testdata("golden/" + GetParam())));
  auto tok = load_tokenizer(testdata(m["model"].get<std::string>()));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), m["n_vocab"].get<int>());
  const std::regex cut(R"(^(.*) \(first (\d+) tokens\)$)");
  int n_text = 0;
  for (const auto& p : m["prompts"]) {
    if (!p.contains("text") || p["text"].is_null()) continue;
    std::string text = p["text"];
    const auto want = p["ids"].get<std::vector<int32_t>>();
    size_t n_cut = 0;
    if (std::smatch sm; std::regex_match(text, sm, cut)) {
      n_cut = std::stoul(sm[2].str());
      text = sm[1].str();
    }
    auto got = tok->encode(text, /*add_special=*/true);
    if (n_cut != 0) {
      ASSERT_EQ(want.size(), n_cut);
      ASSERT_GE(got.size(), n_cut) << text;
      got.resize(n_cut);
    }
    EXPECT_EQ(got, want) << p["name"] << ": '" << text << "'\n got " << ids_str(got) << "\nwant " << ids_str(want);
    ++n_text;
  }
  EXPECT_GT(n_text, 0);
}

class greedy_manifest : public ::testing::TestWithParam<std::string> {};

TEST_P(greedy_manifest, continuations_encode_and_decode) {
  const auto m = nlohmann::json::parse(read_text(testdata("golden/" + GetParam())));
  auto tok = load_tokenizer(testdata(m["model"].get<std::string>()));
  ASSERT_NE(tok, nullptr);
  for (const auto& item : m["greedy_continuations"]["items"]) {
    const auto prompt_ids = item["prompt_ids"].get<std::vector<int32_t>>();
    if (!item["prompt_text"].is_null()) {
      EXPECT_EQ(tok->encode(item["prompt_text"].get<std::string>(), true), prompt_ids) << item["prompt_text"];
    }
    // "concatenation of llama_token_to_piece(token, lstrip=0, special=false)"
    const auto ids = item["continuation_ids"].get<std::vector<int32_t>>();
    const std::string want = item["continuation_text"];
    std::string pieces, streamed;
    stream_decoder dec(*tok);
    for (int32_t id : ids) {
      pieces += tok->token_to_piece(id);
      streamed += dec.push(id);
    }
    streamed += dec.flush();
    EXPECT_EQ(pieces, want);
    EXPECT_EQ(streamed, want);
  }
}

INSTANTIATE_TEST_SUITE_P(pack, golden_manifest, ::testing::ValuesIn(manifests(false)), manifest_param_name);
INSTANTIATE_TEST_SUITE_P(pack, greedy_manifest, ::testing::ValuesIn(manifests(true)), manifest_param_name);

}  // namespace
}  // namespace glia::test
