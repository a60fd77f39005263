// A large buffer in its own mapping, aligned to 2 MiB and marked for transparent huge pages: for
// memory streamed once per use (weights repacked at load, the bandwidth probe). With 4 KiB pages a
// stream takes a TLB miss and a page walk every 4 KiB, with 2 MiB pages one every 2 MiB (a plain
// streaming read measured 8-11% faster on this project's machines, one thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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

// Many buffers carved one after another from a few huge-page mappings, freed together. Each in its
// own mapping, a buffer leaves its tail past the last whole 2 MiB in small pages: TinyLlama's
// repacked matrices (0.3-6.5 MB each) kept ~10% of their bytes in small pages that way, which a
// plain streaming read crosses ~20% slower. Carved from chunks, only each chunk's tail is. A chunk's
// unused end is never written, so it is never backed by memory: it costs address space only.
class huge_page_arena {
 public:
  static constexpr size_t chunk_bytes = size_t(64) << 20;
  static constexpr size_t alignment = 64;

  // Zeroed memory for `bytes`, `alignment`-aligned, valid as long as the arena; nullptr when the
  // system refuses. A request larger than a chunk gets a chunk of its own.
  uint8_t* take(size_t bytes);

 private:
  std::vector<std::unique_ptr<huge_page_buffer>> chunks_;
  size_t used_ = 0, capacity_ = 0;  // of the last chunk
};

}  // namespace glia
