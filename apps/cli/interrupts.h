// Ctrl-C (SIGINT) and SIGTERM for the commands that write files (quantize, synth, perplexity's
// --kl-divergence-base): the first sets a flag that the run checks between steps, so it stops and
// cleans up (its partial output file is removed); a second ends the process at once, as do SIGHUP
// and SIGPIPE, removing the partial output files first (model/partial_files.h). A signal the process
// was started with ignored (nohup, a background job) stays ignored.
#pragma once

#include <atomic>

namespace glia::cli {

const std::atomic<bool>* stop_on_interrupt();

}  // namespace glia::cli
