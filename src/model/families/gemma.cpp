// Gemma 1: embeddings scaled by sqrt(n_embd), GeGLU (tanh GELU) FFN, NeoX RoPE, Q scaled by
// 1/sqrt(head_dim), tied LM head. Norm weights are stored with Gemma's "+1" already folded in.
#include <cmath>

#include "model/families/families.h"

namespace glia::families {

status fill_gemma(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(read_common(md, p));
  p.embed_scale = std::sqrt(float(p.n_embd));
  p.ffn_act = activation::gelu_tanh;
  for (auto& l : p.layers) l.rope.style = rope_style::neox;
  return {};
}

}  // namespace glia::families
