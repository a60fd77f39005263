// Fuzzes loading a Hugging Face tokenizer from the text of tokenizer.json (and tokenizer_config.json):
// any bytes must load or fail with a one-line error, and a tokenizer that loads must encode and
// decode a few fixed texts with ids inside its vocabulary (a loader that accepts inconsistent tables,
// such as merges of unknown tokens or added tokens past the vocabulary, would show up there).
// Input: tokenizer.json text, optionally a NUL byte and tokenizer_config.json text. fuzz_make_seeds
// writes small tokenizer.json files cut down from the pack's (llama2, llama3, qwen3, gemma3).
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "tokenizer/tokenizer.h"
#include "utf8_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glia;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view tokenizer_json = input.substr(0, nul);
  const std::string_view config_json = nul == std::string_view::npos ? std::string_view{} : input.substr(nul + 1);

  auto tok = tokenizer::from_hf_json(tokenizer_json, config_json);
  if (!tok) {
    fuzz::require_one_line(tok.message());
    return 0;
  }
  const tokenizer& t = **tok;
  static constexpr std::string_view texts[] = {
      "Hello world", " <s>  x\n\n\ty", "\xC3\xBCnicode 123 1234567 don't", "<|endoftext|><unk></s>", "\xF0\x9F\x98\x80\xFF",
  };
  for (std::string_view text : texts) {
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = t.encode(text, special, special);
      for (int32_t id : ids) fuzz::require(id >= 0 && id < t.n_vocab(), "encode gave an id outside the vocabulary");
      const std::string back = t.decode(ids, {.special = special});
      fuzz::require(fuzz::is_valid_utf8(back), "Hugging Face decode gave invalid UTF-8", back);
    }
  }
  return 0;
}
