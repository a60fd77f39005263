// Text <-> token ids for a model's vocabulary. GGUF vocabularies (tokenizer.ggml.model "llama":
// SentencePiece; "gpt2": byte-level BPE with the pre-tokenizer named by tokenizer.ggml.pre; "gemma4")
// match llama.cpp's llama_tokenize / llama_token_to_piece / llama_detokenize. Hugging Face tokenizers
// (tokenizer.json "BPE" models, byte-level or with byte fallback) match the reference the pack's goldens
// come from (transformers.js): its encode with and without special tokens and its decode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/algorithm.h"
#include "tokenizer/decoder.h"
#include "tokenizer/special_split.h"
#include "tokenizer/vocab.h"

namespace glia {

namespace gguf {
class file;
}

struct decode_options {
  // Render control/unknown tokens as their text (else they are ""); for Hugging Face tokenizers false
  // is decode(..., skip_special_tokens=True).
  bool special = false;
  bool remove_special = false;  // drop the BOS / EOS (the template's tokens) that add_special adds
};

class tokenizer {
 public:
  static result<std::unique_ptr<tokenizer>> from_gguf(const gguf::file& f);
  // A Hugging Face tokenizer: `path` is a folder with tokenizer.json (or tokenizer.json.gz) and, when
  // present, tokenizer_config.json; or the tokenizer.json file itself.
  static result<std::unique_ptr<tokenizer>> from_hf(const std::string& path);
  // The same from the texts of the two files (config_json may be empty).
  static result<std::unique_ptr<tokenizer>> from_hf_json(std::string_view tokenizer_json, std::string_view config_json);
  static result<std::unique_ptr<tokenizer>> from_vocab(tok::vocab v);
  tokenizer(const tokenizer&) = delete;  // algorithm_ points into vocab_
  tokenizer& operator=(const tokenizer&) = delete;

  // add_special: the vocabulary's BOS / EOS (GGUF flags, or the tokenizer.json post-processor's
  // template). parse_special: text of control and unknown tokens (e.g. "<s>") in the input becomes
  // those tokens; when false it is tokenized as plain text. User-defined tokens are matched either way
  // (llama.cpp, HF). Hugging Face tokenizers encode with parse_special = true by default.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special = false) const;

  // The bytes token `id` stands for: "▁" -> " ", <0x41> -> "A", byte-level "Ġ" -> " ". Control and
  // unknown tokens give "" unless `special`; user-defined tokens give their text; unused/undefined
  // tokens and ids outside the vocabulary give "".
  std::string token_to_piece(int32_t id, bool special = false) const;

  // GGUF: concatenated pieces, minus the one space SPM's prefix added in front of the first token (when
  // that token is a BOS dropped by remove_special, the space is kept, as in llama.cpp), then llama.cpp's
  // clean-up of spaces where the pre-tokenizer asks for it; may end in an incomplete UTF-8 sequence.
  // Hugging Face: the tokenizer.json decoder and clean_up_tokenization_spaces; always well-formed UTF-8.
  // Use stream_decoder for text shown to people as it is generated.
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
  // Set for Hugging Face tokenizers.
  const tok::hf_decoder* hf_decoder() const { return decoder_ ? &*decoder_ : nullptr; }

 private:
  explicit tokenizer(tok::vocab v);
  status init();
  tok::vocab vocab_;
  std::unique_ptr<tok::algorithm> algorithm_;  // refers to vocab_
  std::unique_ptr<tok::special_splitter> splitter_;
  std::optional<tok::hf_decoder> decoder_;
};

// Streaming decode for generated text: feed ids one at a time and get back only complete UTF-8.
// Bytes of a character split across tokens are held back until it is complete; ill-formed sequences
// become U+FFFD (one per maximal ill-formed subpart). Text that a clean-up rule may still change (a
// trailing " " before a possible "?") is held back until the next token decides it.
class stream_decoder {
 public:
  // strip_leading_space: decode a whole text, as decode() does (SPM's prefix space, a tokenizer.json
  // Strip/Metaspace rule, and for GGUF vocabularies llama.cpp's clean-up); the concatenated output then
  // equals decode(ids, {special}). Without it the stream is a continuation: GGUF vocabularies print
  // llama_token_to_piece pieces, as llama.cpp does while generating.
  // raw: the pieces exactly, without a Hugging Face tokenizer's clean-up of continuations (" 's" to
  // "'s"): what a grammar-constrained generation checked against its grammar.
  explicit stream_decoder(const tokenizer& tok, bool special = false, bool strip_leading_space = false, bool raw = false);
  // Control tokens to print as their text even without `special` (markers a reply is read by).
  void show_control(std::vector<int32_t> ids) { shown_ = std::move(ids); }
  std::string push(int32_t id);
  // Ends the stream: held-back bytes of an incomplete character come out as U+FFFD.
  std::string flush();
  void reset();
  bool has_pending() const { return !pending_.empty() || !held_.empty(); }

 private:
  std::string release(std::string text, bool final);

  const tokenizer& tok_;
  bool special_;
  std::vector<int32_t> shown_;
  bool whole_;
  tok::cleanup_style cleanup_ = tok::cleanup_style::none;
  bool first_ = true;    // no token decoded yet
  int strip_left_ = 0;   // leading strip characters still to remove (tokenizer.json Strip)
  std::string pending_;  // bytes of an incomplete UTF-8 sequence
  std::string held_;     // complete text a clean-up rule or a trailing Strip may still change
};

}  // namespace glia
