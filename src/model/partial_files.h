// The temporary files of output_files not yet committed (model/output_file.h), for a signal that
// ends the process to remove: the destructors that remove them otherwise never run then (a hung-up
// terminal, a closed pipe on stderr as in `glia quantize ... 2>&1 | head`, a second Ctrl-C; see
// apps/cli/interrupts.cpp). Slots hold copies of the paths, and remove_all only calls unlink(),
// which a signal handler may.
#pragma once

#include <signal.h>

#include <string>

namespace glia::partial_files {

// The signals whose handlers call remove_all (apps/cli/interrupts.cpp), held back in this thread
// while the object lives: a file created and added under it cannot be left between the two.
class signals_held {
 public:
  signals_held();
  ~signals_held();
  signals_held(const signals_held&) = delete;
  signals_held& operator=(const signals_held&) = delete;

 private:
  sigset_t before_;
};

// A slot for `path`, or -1 where none is free or the path is too long (then no signal removes it).
int add(const std::string& path);
void drop(int slot);  // the file was removed or put in place; -1 is ignored
// Async-signal-safe: unlinks every file still in a slot.
void remove_all();

}  // namespace glia::partial_files
