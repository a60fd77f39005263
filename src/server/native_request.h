// llama-server's own completion API (POST /completion, /completions, /infill), as SillyTavern's
// llama.cpp backend, llama.vscode and scripts written against llama-server speak it: the body is read
// into the completion request it stands for (n_predict as max_tokens, n_probs as top logprobs,
// logit_bias as [[id, bias]] pairs, llama.cpp's sampler fields), so prompts, sampling and
// constraints are /v1/completions'. As llama-server does, fields it does not know are ignored; a
// sampler glia does not have (mirostat) is refused rather than left out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "glia/session.h"
#include "server/request.h"

namespace glia::server {

struct native_request {
  completion_request r;
  // Prompts that mix text and token ids (llama-server's [12, "text", 34] for one prompt, or
  // ["text", [12, 34]] for several), each a list of strings and ids; the route tokenizes them
  // (tokenize_mixed) into r.prompts. Empty: r.prompts holds the prompts.
  std::vector<std::vector<nlohmann::json>> mixed;
  bool return_tokens = false;               // the generated tokens' ids in "tokens"
  std::vector<std::string> response_fields;  // only these (paths such as "timings/prompt_n"); empty: all
};

// defaults: the server's sampling defaults.
api_result<native_request> parse_native_request(std::string_view body, const sampler_params& defaults);

// A mixed prompt's tokens, as llama-server's tokenize_mixed makes them: ids as they are, texts
// tokenized with special-token text read as tokens, BOS (where the vocabulary adds one) only when the
// prompt starts with text.
std::vector<int64_t> tokenize_mixed(const session& s, const std::vector<nlohmann::json>& parts);

// /infill's own fields: the text before and after the cursor, files for context, and text that
// follows the middle marker (llama-server's `prompt` there).
struct infill_input {
  std::string prefix, suffix, middle;
  struct file {
    std::string filename, text;
  };
  std::vector<file> extra;
};

// The body of /infill: its own fields, and the rest read as for /completion (its prompt aside).
api_result<std::pair<native_request, infill_input>> parse_infill_request(std::string_view body, const sampler_params& defaults);

}  // namespace glia::server
