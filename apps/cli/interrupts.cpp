#include "interrupts.h"

#include <signal.h>

#include "model/partial_files.h"

namespace glia::cli {
namespace {

std::atomic<bool> g_interrupted{false};

// Ends the process as `sig` would by default, without the partial output files that unwinding
// would have removed.
void end_by(int sig) {
  partial_files::remove_all();
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // blocked while this handler runs: delivered, with the default action, on return
}

void on_interrupt(int sig) {
  if (g_interrupted.exchange(true)) end_by(sig);  // the second: at once
}

}  // namespace

const std::atomic<bool>* stop_on_interrupt() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A hung-up terminal or a reader that went away (`glia quantize ... 2>&1 | head`): the run could
  // not even report that it stopped, so these end it at once, as by default, minus the partial file.
  sa.sa_handler = end_by;
  sigaction(SIGHUP, &sa, nullptr);
  sigaction(SIGPIPE, &sa, nullptr);
  return &g_interrupted;
}

}  // namespace glia::cli
