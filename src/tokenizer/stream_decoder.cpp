#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace glia {

stream_decoder::stream_decoder(const tokenizer& tok, bool special, bool strip_leading_space)
    : tok_(tok), special_(special), strip_leading_space_(strip_leading_space && tok.vocab().add_space_prefix) {}

std::string stream_decoder::push(int32_t id) {
  std::string piece = tok_.token_to_piece(id, special_);
  if (first_ && strip_leading_space_ && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
  first_ = false;

  pending_ += piece;
  std::string out;
  const size_t used = tok::append_valid_utf8(pending_, out);
  pending_.erase(0, used);
  return out;
}

std::string stream_decoder::flush() {
  // Whatever is held back is the start of a sequence that never completed.
  std::string out = pending_.empty() ? std::string() : std::string(tok::replacement_char);
  pending_.clear();
  return out;
}

void stream_decoder::reset() {
  pending_.clear();
  first_ = true;
}

}  // namespace glia
