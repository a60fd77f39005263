// A large buffer in its own mapping, aligned to 2 MiB and marked for transparent huge pages: for
// memory streamed once per use (weights repacked at load, the bandwidth probe). With 4 KiB pages a
// stream takes a TLB miss and a page walk every 4 KiB, with 2 MiB pages one every 2 MiB (a plain
// streaming read measured 8-11% faster on this project's machines, one thread).
#pragma once

#include <cstddef>
#include <cstdint>

namespace glia {

class huge_page_buffer {
 public:
  huge_page_buffer() = default;
  huge_page_buffer(const huge_page_buffer&) = delete;
  huge_page_buffer& operator=(const huge_page_buffer&) = delete;
  ~huge_page_buffer();

  // Zeroed memory for `bytes` (what it held before is unmapped); nullptr when the system refuses.
  uint8_t* allocate(size_t bytes);
  const uint8_t* data() const { return data_; }
  uint8_t* mutable_data() { return data_; }

 private:
  uint8_t* data_ = nullptr;
  size_t mapped_ = 0;
};

}  // namespace glia
