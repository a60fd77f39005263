// The prompt of a fill-in-the-middle request, laid out as llama-server's /infill lays it out for a
// code model (Qwen2.5-Coder, StarCoder, DeepSeek-Coder, CodeLlama), so that a client such as
// llama.vscode gets the same tokens and completions; with the repository-level pattern where the
// vocabulary has its markers:
//   [FIM_REP]myproject\n [FIM_SEP]file0\n text0 ... [FIM_SEP]filename\n [BOS]
//   [FIM_PRE]prefix prompt [FIM_SUF]suffix [FIM_MID]
// (without them each extra text follows a "--- snippet ---" line; `prompt` is the text before the
// cursor on its line, as llama.vscode sends it). The prefix keeps its last 3/4 of a batch (llama-server's
// -b: 2048, or glia's -b where larger), the suffix its first quarter less the prompt, the extra texts
// what the context leaves after a batch and twice the tokens to generate, their end kept.
#pragma once

#include <cstdint>
#include <vector>

#include "glia/session.h"
#include "server/api_error.h"
#include "server/native_request.h"

namespace glia::server {

// n_batch: the window the prefix and suffix share; n_predict: tokens to generate (-1: none
// reserved). A 400 when the model has no FIM markers.
api_result<std::vector<int32_t>> infill_prompt(const session& s, const infill_input& in, int n_batch, int n_predict);

}  // namespace glia::server
