// Qwen3 (dense): no QKV biases; per-head RMSNorm of Q and K (weights of length head_dim) before RoPE.
#include "model/families/families.h"

namespace glia::families {

status fill_qwen3(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(read_common(md, p));
  p.qk_norm = true;
  for (auto& l : p.layers) l.rope.style = rope_style::neox;
  return {};
}

}  // namespace glia::families
