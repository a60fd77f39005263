// The text pipeline of a BPE tokenizer, as data: normalizers, pre-tokenizers and decoders as
// tokenizer.json describes them (the subset real Llama-family tokenizers use), and the same pieces
// built from a GGUF file's tokenizer.ggml.pre name. The BPE algorithm compiles these once.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace glia::tok {

// A tokenizer.json "pattern": {"String": "..."} (literal) or {"Regex": "..."}.
struct pattern_spec {
  std::string text;
  bool is_regex = false;
};

// How a Split keeps the pieces around its matches (tokenizers' SplitDelimiterBehavior).
enum class split_behavior { isolated, removed, merged_with_previous, merged_with_next, contiguous };

struct normalizer_spec {
  enum class kind { nfc, nfd, nfkc, nfkd, lowercase, prepend, replace, strip, strip_accents };
  kind what = kind::nfc;
  pattern_spec pattern;              // replace
  std::string content;               // replace: the replacement; prepend: the prefix
  bool left = true, right = true;    // strip
};

struct pre_tokenizer_spec {
  enum class kind { split, byte_level, metaspace, digits, whitespace, whitespace_split, punctuation };
  kind what = kind::split;
  pattern_spec pattern;                             // split
  split_behavior behavior = split_behavior::isolated;  // split, punctuation
  bool invert = false;                              // split: the pattern matches the pieces to keep
  bool add_prefix_space = false;                    // byte_level, metaspace
  bool use_regex = true;                            // byte_level: also split with GPT-2's regex
  std::string replacement = "\xE2\x96\x81";         // metaspace
  enum class prepend { always, first, never } prepend_scheme = prepend::always;  // metaspace
  bool split_words = true;                          // metaspace: split before each replacement
  bool individual_digits = false;                   // digits
};

struct decoder_spec {
  enum class kind { byte_level, replace, byte_fallback, fuse, strip, metaspace };
  kind what = kind::fuse;
  pattern_spec pattern;     // replace
  std::string content;      // replace: the replacement; strip: the character removed
  int start = 0, stop = 0;  // strip: how many leading / trailing `content` characters go
  std::string replacement = "\xE2\x96\x81";  // metaspace
  bool add_prefix_space = true;              // metaspace: the first token loses one leading space
};

// Clean-up of decoded text.
enum class cleanup_style {
  none,
  llama_cpp,  // llama_detokenize's clean_spaces: " ?" " !" " ." " ," " ' " " 's" " 'm" " 're" " 've"
  hf,         // clean_up_tokenization_spaces: " ." " ?" " !" " ," " ' " " n't" " 'm" " 's" " 've" " 're"
};

// How a final BPE piece missing from the vocabulary is emitted.
enum class missing_piece {
  llama_cpp_bytes,  // llama.cpp: each byte of the piece's text as a single-byte token, when there is one
  llama_cpp_hex,    // llama.cpp's SPM-style BPE (gemma4): <0xNN> per byte, when there is one
  hf,               // tokenizers: <0xNN> per byte when byte_fallback has them all, else <unk>
};

struct pipeline_spec {
  regex_dialect dialect = regex_dialect::llama_cpp;
  repair_mode repair = repair_mode::per_byte;  // ill-formed input UTF-8 -> U+FFFD
  std::vector<normalizer_spec> normalizers;
  std::vector<pre_tokenizer_spec> pre_tokenizers;
  // BPE model.
  bool ignore_merges = false;  // a pre-token that is itself a token is emitted whole
  bool whole_newline_runs = false;  // ... and so is a run of newlines that is a token (llama.cpp's gemma4)
  bool byte_fallback = false;
  missing_piece missing = missing_piece::llama_cpp_bytes;
  // Decoding (Hugging Face tokenizers only; GGUF vocabularies decode as llama.cpp does).
  bool hf_decode = false;
  bool has_decoder = false;  // tokenizer.json without a decoder joins tokens with spaces
  std::vector<decoder_spec> decoders;
  cleanup_style cleanup = cleanup_style::none;
};

}  // namespace glia::tok
