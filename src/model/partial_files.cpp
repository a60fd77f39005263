#include "model/partial_files.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace glia::partial_files {
namespace {

// A tool writes one or two files at a time; fixed storage, since a signal handler cannot allocate.
constexpr int n_slots = 8;
constexpr size_t max_path = 4096;
// A handler that is removing a slot's file owns it until the process ends (it never returns to
// the code that would reuse the slot, but another thread could): drop() and add() leave it alone.
enum : int { free_slot, filling, ready, removing };
std::atomic<int> state[n_slots];
char paths[n_slots][max_path];
static_assert(std::atomic<int>::is_always_lock_free);  // what makes reading `state` in a handler safe

}  // namespace

signals_held::signals_held() {
  sigset_t ending;
  sigemptyset(&ending);
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGPIPE}) sigaddset(&ending, sig);
  pthread_sigmask(SIG_BLOCK, &ending, &before_);
}

signals_held::~signals_held() { pthread_sigmask(SIG_SETMASK, &before_, nullptr); }

int add(const std::string& path) {
  if (path.size() >= max_path) return -1;
  for (int i = 0; i < n_slots; ++i) {
    int expected = free_slot;
    if (!state[i].compare_exchange_strong(expected, filling)) continue;
    std::memcpy(paths[i], path.c_str(), path.size() + 1);
    state[i].store(ready, std::memory_order_release);
    return i;
  }
  return -1;
}

void drop(int slot) {
  if (slot < 0 || slot >= n_slots) return;
  int expected = ready;
  state[slot].compare_exchange_strong(expected, free_slot, std::memory_order_release);
}

void remove_all() {
  for (int i = 0; i < n_slots; ++i) {
    int expected = ready;
    if (state[i].compare_exchange_strong(expected, removing, std::memory_order_acquire)) ::unlink(paths[i]);
  }
}

}  // namespace glia::partial_files
