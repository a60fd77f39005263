// Loading a Hugging Face tokenizer (tokenizer.json, plus tokenizer_config.json when present) into a
// vocab, following the reference implementation the pack's goldens come from (transformers.js):
// added tokens are matched leftmost-longest in raw text, special ones become control tokens, BOS/EOS come
// from the post-processor's template (else from tokenizer_config's add_bos_token / add_eos_token),
// decoding runs the tokenizer.json decoder and clean_up_tokenization_spaces (default true).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

// config_json may be empty (no tokenizer_config.json). Errors name the JSON member at fault.
// n_embedding_rows > 0: the model's vocabulary size; added tokens past it are left out.
result<vocab> load_vocab_from_hf_json(std::string_view tokenizer_json, std::string_view config_json,
                                      int64_t n_embedding_rows = 0);

// A whole file, gunzipped when it is gzip-compressed (zlib reads plain files as they are).
result<std::string> read_file_maybe_gz(const std::string& path);

}  // namespace glia::tok
