// glia perplexity --kl-divergence: the comparison with a base model's log-probabilities and its
// report (llama-perplexity's lines and statistics).
#pragma once

#include <string>

#include "glia/session.h"

namespace glia::cli {

int run_kl_divergence(session_options so, const std::string& base_path);

}  // namespace glia::cli
