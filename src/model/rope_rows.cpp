#include "model/rope_rows.h"

#include <cstring>

namespace glia {

status interleave_rope_rows(std::span<const uint8_t> in, std::vector<uint8_t>& out, int64_t n_rows, int64_t n_heads,
                            std::string_view name) {
  if (n_heads <= 0 || n_rows <= 0 || n_rows % n_heads != 0 || (n_rows / n_heads) % 2 != 0 || in.size() % size_t(n_rows) != 0)
    return make_error("tensor {}: {} rows do not split into {} heads of an even size", name, n_rows, n_heads);
  const size_t row_bytes = in.size() / size_t(n_rows);
  const int64_t hd = n_rows / n_heads;
  out.resize(in.size());
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < hd / 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::memcpy(out.data() + size_t(h * hd + 2 * i + j) * row_bytes, in.data() + size_t(h * hd + j * hd / 2 + i) * row_bytes,
                    row_bytes);
  return {};
}

}  // namespace glia
