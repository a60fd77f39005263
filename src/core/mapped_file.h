// A whole file mapped read-only and private (PROT_READ, MAP_PRIVATE): weights are shared with the
// page cache, never copied and never written. Formats that index into a file (safetensors) hold one
// and hand out pointers into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace glia {

class mapped_file {
 public:
  // Maps all of `path`; every error names the path ("PATH: cannot open: No such file or directory").
  // An empty file gives an empty span (mmap refuses a length of 0).
  static result<mapped_file> open(const std::string& path);

  mapped_file() = default;
  mapped_file(mapped_file&& other) noexcept;
  mapped_file& operator=(mapped_file&& other) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(mapping_), size_}; }
  size_t size() const { return size_; }

 private:
  void* mapping_ = nullptr;
  size_t size_ = 0;
};

}  // namespace glia
