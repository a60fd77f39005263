// Llama 1/2/3 and Mistral (GGUF arch "llama"): pre-norm, SwiGLU, interleaved RoPE, optional
// rope_freqs tensor on every layer (Llama 3.1 frequency scaling), linear or YaRN RoPE scaling.
#include "model/families/families.h"

namespace glia::families {

status fill_llama(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(read_common(md, p));
  const bool has_rope_freqs = md.file().find_tensor("rope_freqs.weight") != nullptr;
  for (auto& l : p.layers) {
    l.rope.style = rope_style::normal;
    l.use_rope_freqs = has_rope_freqs;
  }
  return {};
}

}  // namespace glia::families
