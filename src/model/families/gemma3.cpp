// Gemma 3 (text): QK-norm, post norms, five local (sliding-window) layers per global one by default.
// Local layers use rope.freq_base_swa (10000) unscaled; global layers use rope.freq_base with the
// file's linear scaling. No softcapping.
#include <cmath>

#include "model/families/families.h"

namespace glia::families {

status fill_gemma3(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(fill_gemma(md, p));
  p.qk_norm = true;
  p.post_attn_norm = true;
  p.post_ffn_norm = true;
  auto window = md.get_int("attention.sliding_window", 512);
  GLIA_TRY(window);
  if (*window <= 0) return make_error("metadata key {}: window {} must be positive", md.key("attention.sliding_window"), *window);
  auto base_swa = md.get_float("rope.freq_base_swa", 10000.0);
  GLIA_TRY(base_swa);
  if (!(*base_swa > 0) || !std::isfinite(*base_swa))
    return make_error("metadata key {}: RoPE base must be a positive number, found {}", md.key("rope.freq_base_swa"), *base_swa);
  auto sliding = sliding_layers(md, p.n_layer, 6);
  GLIA_TRY(sliding);
  const bool is_27b = p.n_layer == 62;
  auto scale = md.get_float("attention.scale", 0.0);
  GLIA_TRY(scale);
  for (int il = 0; il < p.n_layer; ++il) {
    auto& l = p.layers[size_t(il)];
    l.sliding = (*sliding)[size_t(il)];
    l.window = l.sliding ? int(*window) : 0;
    if (l.sliding) {
      l.rope.freq_base = float(*base_swa);
      l.rope.freq_scale = 1.0f;
    }
    if (*scale > 0) l.attn_scale = float(*scale);
    else if (is_27b) l.attn_scale = 1.0f / std::sqrt(float(p.n_embd / l.n_head));
  }
  return {};
}

}  // namespace glia::families
