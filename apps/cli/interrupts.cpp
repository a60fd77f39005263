#include "interrupts.h"

#include <signal.h>

namespace glia::cli {
namespace {

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) { g_interrupted.store(true); }

}  // namespace

const std::atomic<bool>* stop_on_interrupt() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESETHAND;  // the next one gets the default action: the process ends
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return &g_interrupted;
}

}  // namespace glia::cli
