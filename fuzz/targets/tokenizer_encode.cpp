// Fuzzes text -> ids with every tokenizer kind (fixtures.h: SentencePiece from GGUF, tokenizer.json
// BPE with byte fallback, byte-level BPE with pre-tokenizer regexes from tokenizer.json and from
// GGUF). Any bytes (invalid UTF-8, NULs, text of special tokens) must encode to ids inside the
// vocabulary, and decode must take them back without harm (for Hugging Face tokenizers, to valid
// UTF-8). For the Brown SentencePiece vocabulary, plain valid UTF-8 text must also come back
// unchanged through decode (SPM with byte fallback and identity normalization loses nothing).
// Input: byte 0 = flags (bit 0 add_special, bit 1 parse_special, bits 2-7 the tokenizer kind, modulo
// the number of kinds), the rest is the text. fuzz_make_seeds writes seeds for every kind.
#include <string>
#include <string_view>

#include "fixtures.h"
#include "fuzz_support.h"
#include "utf8_check.h"

// libFuzzer calls this once before any input: loading every vocabulary here keeps the seconds the
// big tokenizer.json files take (more under ASan) out of the first input of each kind, which would
// otherwise trip -timeout. (The replay driver does not call it; kinds load lazily there.)
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (int k = 0; k < glia::fuzz::n_tokenizer_kinds(); ++k) (void)glia::fuzz::tokenizer_of_kind(k);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glia;
  if (size == 0) return 0;
  const bool add_special = data[0] & 1;
  const bool parse_special = data[0] & 2;
  const int kind = (data[0] >> 2) % fuzz::n_tokenizer_kinds();
  const tokenizer& tok = fuzz::tokenizer_of_kind(kind);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
  for (int32_t id : ids) fuzz::require(id >= 0 && id < tok.n_vocab(), "encode gave an id outside the vocabulary");
  if (add_special && tok.add_bos()) fuzz::require(!ids.empty() && ids.front() == tok.bos(), "BOS missing");

  const std::string all = tok.decode(ids, {.special = true, .remove_special = add_special});
  if (fuzz::tokenizer_kind_is_hf(kind)) {
    // tokenizer.h: Hugging Face decode is always well-formed UTF-8 (byte fallback pieces that do not
    // form a character become U+FFFD).
    fuzz::require(fuzz::is_valid_utf8(all), "Hugging Face decode gave invalid UTF-8");
    fuzz::require(fuzz::is_valid_utf8(tok.decode(ids, {.special = false})), "Hugging Face decode gave invalid UTF-8");
  }
  if (kind != 0) return 0;

  // Round trip of plain text (no BOS, special-token text not parsed; with either, llama.cpp puts
  // the prefix space back after the special token). Left out: text that already holds U+2581 (the
  // vocabulary's space, which decodes to " "), and invalid UTF-8, where llama.cpp's symbol split
  // takes a lead byte's claimed length (0xFD: 4 bytes) and so can swallow the U+2581 of a
  // following space into byte tokens, which decode as the bytes of U+2581. Only for Brown: the
  // other kinds normalize (NFC, clean-up of spaces before punctuation) or cannot spell every byte.
  if (fuzz::is_valid_utf8(text) && text.find("\xE2\x96\x81") == std::string_view::npos) {
    const std::vector<int32_t> plain = tok.encode(text, false, false);
    const std::string back = tok.decode(plain, {.special = true});
    fuzz::require(back == text, "decode(encode(text)) differs from text", back);
  }
  return 0;
}
