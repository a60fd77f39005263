// Gemma 2: Gemma 1 plus post-attention and post-FFN norms, attention-logit and final-logit
// softcapping, and sliding-window attention on alternate layers (even layers local by default).
#include <cmath>

#include "model/families/families.h"

namespace glia::families {

status fill_gemma2(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(fill_gemma(md, p));
  p.post_attn_norm = true;
  p.post_ffn_norm = true;
  auto attn_cap = md.get_float("attn_logit_softcapping", 50.0);
  GLIA_TRY(attn_cap);
  auto final_cap = md.get_float("final_logit_softcapping", 30.0);
  GLIA_TRY(final_cap);
  if (*attn_cap < 0 || *final_cap < 0 || !std::isfinite(*attn_cap) || !std::isfinite(*final_cap))
    return make_error("{}: softcap values must be non-negative numbers (attention {}, final {})", p.arch, *attn_cap, *final_cap);
  p.attn_softcap = float(*attn_cap);
  p.final_softcap = float(*final_cap);
  auto window = md.get_int("attention.sliding_window", 4096);
  GLIA_TRY(window);
  if (*window <= 0) return make_error("metadata key {}: window {} must be positive", md.key("attention.sliding_window"), *window);
  auto sliding = sliding_layers(md, p.n_layer, 2);
  GLIA_TRY(sliding);
  // Gemma 2 27B scales queries by 1/sqrt(n_embd / n_head) (query_pre_attn_scalar), the others by
  // 1/sqrt(head_dim); an explicit attention.scale key wins.
  const bool is_27b = p.n_layer == 46;
  auto scale = md.get_float("attention.scale", 0.0);
  GLIA_TRY(scale);
  for (int il = 0; il < p.n_layer; ++il) {
    auto& l = p.layers[size_t(il)];
    l.sliding = (*sliding)[size_t(il)];
    l.window = l.sliding ? int(*window) : 0;
    if (*scale > 0) l.attn_scale = float(*scale);
    else if (is_27b) l.attn_scale = 1.0f / std::sqrt(float(p.n_embd / l.n_head));
  }
  return {};
}

}  // namespace glia::families
