// Qwen2 / Qwen2.5: Llama layout with biases on the Q, K and V projections and NeoX RoPE.
#include "model/families/families.h"

namespace glia::families {

status fill_qwen2(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(read_common(md, p));
  p.qkv_bias = true;
  for (auto& l : p.layers) l.rope.style = rope_style::neox;
  return {};
}

}  // namespace glia::families
