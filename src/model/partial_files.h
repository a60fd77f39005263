// The temporary files of output_files not yet committed (model/output_file.h), for a signal that
// ends the process to remove: the destructors that remove them otherwise never run then (a hung-up
// terminal, a closed pipe on stderr as in `glia quantize ... 2>&1 | head`, a second Ctrl-C; see
// apps/cli/interrupts.cpp). Slots hold copies of the paths, and remove_all only calls unlink(),
// which a signal handler may.
#pragma once

#include <string>

namespace glia::partial_files {

// A slot for `path`, or -1 where none is free or the path is too long (then no signal removes it).
int add(const std::string& path);
void drop(int slot);  // the file was removed or put in place; -1 is ignored
// Async-signal-safe: unlinks every file still in a slot.
void remove_all();

}  // namespace glia::partial_files
