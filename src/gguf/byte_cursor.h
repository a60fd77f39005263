// A bounds-checked little-endian reader over a byte range. Every read either succeeds completely or
// leaves the cursor where it was and returns false, so callers can name the field in the error.
#pragma once

#include <cstdint>
#include <string>

namespace glia::gguf::detail {

class byte_cursor {
 public:
  byte_cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t remaining() const { return size_ - pos_; }

  // Bytes are assembled explicitly so the parse does not depend on the host's byte order.
  template <typename T>
  bool read_le(T& out) {
    if (remaining() < sizeof(T)) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
    out = T(v);
    pos_ += sizeof(T);
    return true;
  }

  // Points `out` at the next n bytes and moves past them.
  bool take(uint64_t n, const uint8_t*& out) {
    if (remaining() < n) return false;
    out = data_ + pos_;
    pos_ += n;
    return true;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

}  // namespace glia::gguf::detail
