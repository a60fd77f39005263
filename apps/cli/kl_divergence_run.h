// glia perplexity --kl-divergence: the comparison with a base model's log-probabilities and its
// report (llama-perplexity's lines and statistics).
#pragma once

#include <string>

#include "glia/session.h"

namespace glia::cli {

// ctx_given: the user passed -c (a -c other than the base's chunk size gets a note; the base's wins).
int run_kl_divergence(session_options so, const std::string& base_path, bool ctx_given);

}  // namespace glia::cli
