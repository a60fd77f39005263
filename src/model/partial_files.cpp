#include "model/partial_files.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace glia::partial_files {
namespace {

// A tool writes one or two files at a time; fixed storage, since a signal handler cannot allocate.
constexpr int n_slots = 8;
constexpr size_t max_path = 4096;
enum : int { free_slot, filling, ready };
std::atomic<int> state[n_slots];
char paths[n_slots][max_path];
static_assert(std::atomic<int>::is_always_lock_free);  // what makes reading `state` in a handler safe

}  // namespace

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
  if (slot >= 0 && slot < n_slots) state[slot].store(free_slot, std::memory_order_release);
}

void remove_all() {
  for (int i = 0; i < n_slots; ++i)
    if (state[i].load(std::memory_order_acquire) == ready) ::unlink(paths[i]);
}

}  // namespace glia::partial_files
