// Turning tokens back into text beyond concatenating pieces: the decoder chain of a Hugging Face
// tokenizer.json (as the reference, transformers.js, runs it) and the space clean-up both llama.cpp and
// Hugging Face apply to decoded text.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/pipeline.h"

namespace glia::tok {

// Removes the spaces the clean-up rules of `style` remove (see cleanup_style).
void clean_up(std::string& text, cleanup_style style);

// Length of the longest prefix of `text` (well-formed UTF-8) that clean-up treats the same whatever
// text follows: every rule starts with a space and spans at most four bytes, so a cut after three
// non-space bytes is safe. Ends on a character boundary.
size_t clean_up_stable_prefix(std::string_view text);

// A compiled tokenizer.json decoder.
class hf_decoder {
 public:
  static result<hf_decoder> compile(const pipeline_spec& spec);

  // Decodes the token texts in order; added[i] marks added tokens (ByteLevel leaves those as they
  // are). The result may hold ill-formed UTF-8 from byte tokens; callers repair it.
  std::string decode(std::span<const std::string_view> tokens, const std::vector<bool>& added) const;

  // The bytes one token contributes in the middle of a text. Together with the start/end rules below
  // this is what a stream emits, token by token.
  std::string piece(std::string_view token, bool added) const;
  // Start and end of text: how many leading / trailing `strip_char()`s go (a Strip after Fuse), whether
  // the first token loses one leading space (Metaspace), and whether tokens are joined with spaces
  // (no decoder at all).
  int strip_leading() const { return strip_start_; }
  int strip_trailing() const { return strip_stop_; }
  const std::string& strip_char() const { return strip_char_; }
  bool first_token_loses_space() const { return metaspace_first_; }
  bool joins_with_spaces() const { return !spec_.has_decoder; }

 private:
  struct step {
    decoder_spec spec;
    std::optional<regex> re;  // replace with a Regex pattern
    bool after_fuse = false;
  };
  void apply(const step& s, std::vector<std::string>& toks, std::vector<bool>& added, bool whole_text) const;

  pipeline_spec spec_;
  std::vector<step> steps_;
  int strip_start_ = 0, strip_stop_ = 0;
  std::string strip_char_ = " ";
  bool metaspace_first_ = false;
};

}  // namespace glia::tok
