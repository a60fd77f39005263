// Llama 1/2/3 and Mistral (GGUF arch "llama"): pre-norm, SwiGLU, interleaved RoPE, optional
// rope_freqs tensor on every layer (Llama 3.1 frequency scaling), linear or YaRN RoPE scaling,
// Mistral 7B v0.1's sliding window.
#include <cstdint>

#include "model/families/families.h"

namespace glia::families {

status fill_llama(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(read_common(md, p));
  const bool has_rope_freqs = md.file().find_tensor("rope_freqs.weight") != nullptr;
  for (auto& l : p.layers) {
    l.rope.style = rope_style::normal;
    l.use_rope_freqs = has_rope_freqs;
  }
  // Mistral's sliding window, as files made from a checkpoint folder carry it (llama.cpp's converter
  // leaves it out, and llama.cpp ignores it on llama files): every layer, unless a pattern names the
  // sliding ones. 0 is no window.
  GLIA_ASSIGN(const int64_t window, md.get_int("attention.sliding_window", 0));
  if (window == 0) return {};
  if (window < 0 || window > INT32_MAX)
    return make_error("metadata key {}: window {} must be from 1 to {} (0: none)", md.key("attention.sliding_window"), window,
                      INT32_MAX);
  std::vector<bool> sliding(size_t(p.n_layer), true);
  if (md.file().find(md.key("attention.sliding_window_pattern"))) {
    GLIA_ASSIGN(sliding, sliding_layers(md, p.n_layer, 0));
  }
  for (int il = 0; il < p.n_layer; ++il) {
    auto& l = p.layers[size_t(il)];
    l.sliding = sliding[size_t(il)];
    l.window = l.sliding ? int(window) : 0;
  }
  return {};
}

}  // namespace glia::families
