// Fuzzes ids -> text with the Brown SentencePiece vocabulary: any ids (negative, past the
// vocabulary, control and byte tokens in any order) decode without harm, and the streaming decoder
// only ever emits valid UTF-8, equal to decode()'s text whenever that text is valid UTF-8.
// Input: byte 0 = flags (bit 0 special, bit 1 remove_special), then one id per 2 bytes (little
// endian), mapped onto [-32, n_vocab + 32) so that most ids are real tokens.
#include <string>

#include "fixtures.h"
#include "fuzz_support.h"
#include "utf8_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glia;
  const tokenizer& tok = fuzz::brown_tokenizer();
  if (size == 0) return 0;
  const bool special = data[0] & 1;
  const bool remove_special = data[0] & 2;
  std::vector<int32_t> ids;
  for (size_t i = 1; i + 1 < size; i += 2) {
    const int32_t raw = int32_t(data[i] | (data[i + 1] << 8));
    ids.push_back(raw % (tok.n_vocab() + 64) - 32);
  }

  const std::string text = tok.decode(ids, {.special = special, .remove_special = remove_special});
  for (int32_t id : ids) (void)tok.token_to_piece(id, special);

  stream_decoder dec(tok, special, /*strip_leading_space=*/true);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string piece = dec.push(id);
    fuzz::require(fuzz::is_valid_utf8(piece), "stream_decoder emitted invalid UTF-8", piece);
    streamed += piece;
  }
  const std::string tail = dec.flush();
  fuzz::require(fuzz::is_valid_utf8(tail), "stream_decoder flush emitted invalid UTF-8", tail);
  streamed += tail;
  fuzz::require(!dec.has_pending(), "stream_decoder holds bytes after flush");
  if (!remove_special && fuzz::is_valid_utf8(text))
    fuzz::require(streamed == text, "streamed text differs from decode() of valid UTF-8", streamed);
  return 0;
}
