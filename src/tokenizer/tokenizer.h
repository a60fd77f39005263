// Text <-> token ids for a model's vocabulary, matching llama.cpp's llama_tokenize /
// llama_token_to_piece / llama_detokenize. Today: SentencePiece vocabularies (tokenizer.ggml.model
// "llama") from GGUF metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/algorithm.h"
#include "tokenizer/vocab.h"

namespace glia {

namespace gguf {
class file;
}

struct decode_options {
  bool special = false;         // render control/unknown tokens as their text (else they are "")
  bool remove_special = false;  // drop a leading BOS / trailing EOS when the vocab adds them
};

class tokenizer {
 public:
  static result<std::unique_ptr<tokenizer>> from_gguf(const gguf::file& f);
  static std::unique_ptr<tokenizer> from_vocab(tok::vocab v);
  tokenizer(const tokenizer&) = delete;  // algorithm_ points into vocab_
  tokenizer& operator=(const tokenizer&) = delete;

  // add_special: BOS / EOS as the vocab's add_bos / add_eos flags say. parse_special: text of
  // control and unknown tokens (e.g. "<s>") in the input becomes those tokens; when false it is
  // tokenized as plain text. User-defined tokens are matched either way (llama.cpp, HF).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special = false) const;

  // The bytes token `id` stands for: "▁" -> " ", <0x41> -> "A". Control and unknown tokens give ""
  // unless `special`; user-defined tokens give their text; unused/undefined tokens and ids outside
  // the vocabulary give "".
  std::string token_to_piece(int32_t id, bool special = false) const;

  // Concatenated pieces, minus the one space SPM's prefix added in front of the first token (when
  // that token is a BOS dropped by remove_special, the space is kept, as in llama.cpp). May end in
  // an incomplete UTF-8 sequence; use stream_decoder for text shown to people.
  std::string decode(std::span<const int32_t> ids, const decode_options& opt = {}) const;

  int32_t n_vocab() const { return vocab_.size(); }
  int32_t bos() const { return vocab_.bos; }
  int32_t eos() const { return vocab_.eos; }
  int32_t eot() const { return vocab_.eot; }
  int32_t eom() const { return vocab_.eom; }
  int32_t unk() const { return vocab_.unk; }
  int32_t pad() const { return vocab_.pad; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  bool is_eog(int32_t id) const { return vocab_.is_eog(id); }  // EOS, EOT, EOM and the like
  bool is_control(int32_t id) const { return vocab_.has(id, tok::token_attr::control); }
  std::string_view token_text(int32_t id) const;  // the raw vocabulary text, "" outside the vocab
  const tok::vocab& vocab() const { return vocab_; }

 private:
  explicit tokenizer(tok::vocab v);
  tok::vocab vocab_;
  std::unique_ptr<tok::algorithm> algorithm_;  // refers to vocab_
};

// Streaming decode for generated text: feed ids one at a time and get back only complete UTF-8.
// Bytes of a character split across tokens are held back until it is complete; ill-formed sequences
// become U+FFFD (one per maximal ill-formed subpart).
class stream_decoder {
 public:
  // strip_leading_space: drop the space SPM's prefix put before the first token, as decode() does
  // (for decoding a whole prompt; generated continuations keep their spaces).
  explicit stream_decoder(const tokenizer& tok, bool special = false, bool strip_leading_space = false);
  std::string push(int32_t id);
  // Ends the stream: held-back bytes of an incomplete character come out as U+FFFD.
  std::string flush();
  void reset();
  bool has_pending() const { return !pending_.empty(); }

 private:
  const tokenizer& tok_;
  bool special_;
  bool strip_leading_space_;
  bool first_ = true;
  std::string pending_;  // bytes of an incomplete UTF-8 sequence
};

}  // namespace glia
