// The host backends' memory: ordinary aligned allocations and memcpy, and a plain scan for
// non-finite values.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/backend.h"
#include "core/memory_info.h"

namespace glia {

backend_buffer backend::alloc(size_t bytes) {
  constexpr size_t align = 64;
  const size_t rounded = (std::max<size_t>(bytes, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p) throw std::bad_alloc();
  return backend_buffer(p, bytes, [](void* data) { std::free(data); });
}

std::optional<uint64_t> backend::available_memory() const { return available_memory_bytes(); }

void backend::upload(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void backend::download(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void backend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

void backend::find_nonfinite(const float* x, int64_t n, nonfinite_record* record) {
  *record = nonfinite_record{};
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) {
      *record = nonfinite_record{i, x[i]};
      return;
    }
}

}  // namespace glia
