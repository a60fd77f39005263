// Ctrl-C (SIGINT) and SIGTERM for the commands that write files (quantize, synth, perplexity's
// --kl-divergence-base): the first sets a flag that the run checks between steps, so it stops and
// cleans up (its partial output file is removed); a second ends the process at once.
#pragma once

#include <atomic>

namespace glia::cli {

const std::atomic<bool>* stop_on_interrupt();

}  // namespace glia::cli
