// The compiled text half of a BPE tokenizer: repairs ill-formed UTF-8, normalizes a plain-text
// fragment and cuts it into pre-tokens ("words") that BPE then merges independently.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/pipeline.h"

namespace glia::tok {

// Storage the words of one fragment point into; reused across fragments of one encode call.
struct pipeline_scratch {
  std::string text;               // the repaired / normalized fragment
  std::deque<std::string> owned;  // pieces a pre-tokenizer rewrote
  std::vector<std::string_view> pieces, next;
  void clear() {
    owned.clear();
    pieces.clear();
    next.clear();
  }
};

class text_pipeline {
 public:
  static result<text_pipeline> compile(const pipeline_spec& spec);

  // Normalizes and pre-tokenizes `text` (one plain fragment; `section` is its index among the
  // fragments of the input, which Metaspace's "first" scheme looks at). `words` views `s`.
  void run(std::string_view text, int section, pipeline_scratch& s, std::vector<std::string_view>& words) const;

  // True when a ByteLevel pre-tokenizer runs: words are raw bytes that stand for byte-level text.
  bool byte_level() const { return byte_level_; }

  struct normalizer;
  struct pre_tokenizer;

 private:
  std::vector<std::shared_ptr<const normalizer>> normalizers_;
  std::vector<std::shared_ptr<const pre_tokenizer>> pre_tokenizers_;
  repair_mode repair_ = repair_mode::per_byte;
  bool byte_level_ = false;
};

// Cuts `piece` at the matches of `re` and appends what `behavior` keeps to `out` (invert: the matches
// are the pieces, the text between them the delimiters). Empty matches cut too.
void split_by_regex(std::string_view piece, const regex& re, split_behavior behavior, bool invert,
                    std::vector<std::string_view>& out);

}  // namespace glia::tok
