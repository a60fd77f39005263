#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace glia {

stream_decoder::stream_decoder(const tokenizer& tok, bool special, bool strip_leading_space, bool raw)
    : tok_(tok), special_(special), whole_(strip_leading_space) {
  const tok::hf_decoder* d = tok.hf_decoder();
  // Hugging Face decodes continuations with its clean-up too; llama.cpp prints raw pieces while
  // generating and cleans up only in llama_detokenize.
  if ((d || whole_) && !raw) cleanup_ = tok.vocab().pipeline.cleanup;
  if (d && whole_) strip_left_ = d->strip_leading();
}

std::string stream_decoder::push(int32_t id) {
  std::string piece;
  const bool special = special_ || std::find(shown_.begin(), shown_.end(), id) != shown_.end();
  if (const tok::hf_decoder* d = tok_.hf_decoder()) {
    if (!special && tok_.vocab().has(id, tok::token_attr::control | tok::token_attr::unknown)) return {};
    if (!tok_.vocab().valid(id) || tok_.token_text(id).empty()) return {};
    piece = tok_.token_to_piece(id, true);
    if (d->joins_with_spaces() && !first_) piece.insert(0, " ");
    if (whole_ && first_ && d->first_token_loses_space() && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
  } else {
    piece = tok_.token_to_piece(id, special);
    if (first_ && whole_ && tok_.vocab().add_space_prefix && !piece.empty() && piece.front() == ' ') piece.erase(0, 1);
  }
  first_ = false;

  pending_ += piece;
  std::string text;
  const size_t used = tok::append_valid_utf8(pending_, text);
  pending_.erase(0, used);
  return release(std::move(text), false);
}

// Applies the start-of-text strip, then holds back what a later token could still change.
std::string stream_decoder::release(std::string text, bool final) {
  const tok::hf_decoder* d = tok_.hf_decoder();
  if (strip_left_ > 0) {
    const std::string& c = d->strip_char();
    while (strip_left_ > 0 && !c.empty() && text.starts_with(c)) text.erase(0, c.size()), --strip_left_;
    if (!text.empty()) strip_left_ = 0;  // something else came first: nothing more to strip
  }
  held_ += text;
  size_t cut = held_.size();
  if (final) {
    if (d && whole_) {  // a trailing Strip removes up to that many characters at the very end
      const std::string& c = d->strip_char();
      for (int i = 0; i < d->strip_trailing() && !c.empty() && held_.ends_with(c); ++i) held_.resize(held_.size() - c.size());
    }
    cut = held_.size();
  } else {
    if (cleanup_ != tok::cleanup_style::none) cut = tok::clean_up_stable_prefix(held_);
    if (d && whole_ && d->strip_trailing() > 0) {
      const std::string& c = d->strip_char();
      while (!c.empty() && cut >= c.size() && held_.compare(cut - c.size(), c.size(), c) == 0) cut -= c.size();
    }
  }
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  tok::clean_up(out, cleanup_);
  return out;
}

std::string stream_decoder::flush() {
  // Whatever is held back is the start of a sequence that never completed.
  std::string text = pending_.empty() ? std::string() : std::string(tok::replacement_char);
  pending_.clear();
  return release(std::move(text), true);
}

void stream_decoder::reset() {
  pending_.clear();
  held_.clear();
  first_ = true;
  const tok::hf_decoder* d = tok_.hf_decoder();
  strip_left_ = d && whole_ ? d->strip_leading() : 0;
}

}  // namespace glia
