// The layer a GGUF tensor belongs to, from its "blk.N." name.
#pragma once

#include <charconv>
#include <string_view>

namespace glia {

// N of a "blk.N..." name, -1 for any other name (llama.cpp reads it with sscanf("blk.%d.")).
inline int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int v = -1;
  const char* b = name.data() + 4;
  const char* e = name.data() + name.size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p == b) return -1;
  return v;
}

}  // namespace glia
