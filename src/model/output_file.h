// The file a tool writes its result to (glia quantize, glia synth). A regular file, new or existing,
// directly or behind symlinks, is written under a temporary name next to it and renamed over it by
// commit(), so a run that fails or is interrupted leaves what was there; a replaced file keeps its
// mode (and owner where allowed) and is on disk (fsync) before the rename. Anything else is written
// in order as it is and never removed: a pipe, a device, a descriptor's name (/dev/stdout, /dev/fd/N,
// /proc/self/fd/N, even when the shell points it at a file), a file that is a mount point (a
// container's bind mount; one open() cannot tell is copied over in place at the end), and a writable
// file whose folder takes no new names (read-only folder, sticky folder, name too long for the suffix).
#pragma once

#include <cstdio>
#include <string>

#include "core/status.h"

namespace glia {

class output_file {
 public:
  static result<output_file> open(const std::string& path);
  output_file(output_file&& o) noexcept;
  output_file& operator=(output_file&&) = delete;
  output_file(const output_file&) = delete;
  ~output_file();  // not committed: closes and removes the temporary file

  std::FILE* stream() const { return f_; }
  const std::string& path() const { return path_; }  // as the user gave it
  // Closes the file and puts it in place. After a failure nothing was replaced.
  status commit();

 private:
  output_file() = default;
  std::string path_;
  std::string target_;     // the file that commit() replaces (symlinks resolved)
  std::string temp_path_;  // empty when written straight to path_
  int partial_slot_ = -1;  // temp_path_'s slot in partial_files (removed if a signal ends the process)
  std::FILE* f_ = nullptr;
};

}  // namespace glia
