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

// Installs `handler` for `sig` unless the process was started with it ignored (nohup ignores
// SIGHUP, a shell SIGINT for a background job): that choice is the user's.
void catch_unless_ignored(int sig, void (*handler)(int)) {
  struct sigaction old {};
  if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) return;
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

}  // namespace

const std::atomic<bool>* stop_on_interrupt() {
  catch_unless_ignored(SIGINT, on_interrupt);
  catch_unless_ignored(SIGTERM, on_interrupt);
  // A hung-up terminal or a reader that went away (`glia quantize ... 2>&1 | head`): the run could
  // not even report that it stopped, so these end it at once, as by default, minus the partial file.
  catch_unless_ignored(SIGHUP, end_by);
  catch_unless_ignored(SIGPIPE, end_by);
  return &g_interrupted;
}

}  // namespace glia::cli
