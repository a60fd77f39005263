// What a GGUF file's tokenizer.ggml.pre name means: the pre-tokenizer regexes llama.cpp runs for it
// (one after another, each splitting the pieces of the previous one) and the per-name flags it sets.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pipeline.h"

namespace glia::tok {

struct pre_type {
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // a pre-token that is a token is emitted whole (Llama 3 and kin)
  bool clean_spaces = true;    // llama_detokenize's clean-up of " ?" and friends
  bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
  bool byte_encode = true;     // false: SPM-style BPE on raw UTF-8 with "▁" for spaces (gemma4)
  bool no_bos = false;         // the BOS default is cleared (chatglm)
};

// The entry for `name` ("" = llama.cpp's "default"); nullopt for names glia does not know, or knows to
// need a tokenizer other than regex + BPE (kimi-k2, afmoe, tiny_aya, whitespace).
std::optional<pre_type> find_pre_type(std::string_view name);

// The text pipeline llama.cpp runs for a BPE vocabulary with this pre-tokenizer.
pipeline_spec gguf_bpe_pipeline(const pre_type& p);

}  // namespace glia::tok
