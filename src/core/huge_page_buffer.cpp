#include "core/huge_page_buffer.h"

#include <sys/mman.h>

#include <algorithm>

namespace glia {
namespace {

constexpr size_t small_page = size_t(4) << 10;
constexpr size_t huge_page = size_t(2) << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

huge_page_buffer::~huge_page_buffer() {
  if (data_) munmap(data_, mapped_);
}

uint8_t* huge_page_buffer::allocate(size_t bytes) {
  if (data_) munmap(data_, mapped_);
  data_ = nullptr;
  mapped_ = 0;
  const size_t len = round_up(bytes == 0 ? 1 : bytes, small_page);
  // Over-map by one huge page, then trim both ends so that the mapping starts on a 2 MiB boundary
  // (the kernel only backs whole aligned 2 MiB ranges of a mapping with huge pages); the tail past
  // the last full huge page stays in small pages, so nothing is rounded up to 2 MiB.
  const size_t span = len + huge_page;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto* base = static_cast<uint8_t*>(raw);
  const auto addr = reinterpret_cast<uintptr_t>(base);
  uint8_t* aligned = base + (round_up(addr, huge_page) - addr);
  if (aligned > base) munmap(base, size_t(aligned - base));
  const size_t tail = size_t(base + span - (aligned + len));
  if (tail > 0) munmap(aligned + len, tail);
  // Advice only: where transparent huge pages are off this does nothing and small pages serve.
  madvise(aligned, len, MADV_HUGEPAGE);
  data_ = aligned;
  mapped_ = len;
  return data_;
}

uint8_t* huge_page_arena::take(size_t bytes) {
  const size_t need = round_up(bytes == 0 ? 1 : bytes, alignment);
  if (chunks_.empty() || capacity_ - used_ < need) {
    auto chunk = std::make_unique<huge_page_buffer>();
    const size_t size = std::max(chunk_bytes, need);
    if (!chunk->allocate(size)) return nullptr;
    chunks_.push_back(std::move(chunk));
    used_ = 0;
    capacity_ = size;
  }
  uint8_t* p = chunks_.back()->mutable_data() + used_;
  used_ += need;
  return p;
}

}  // namespace glia
