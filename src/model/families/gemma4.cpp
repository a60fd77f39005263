// Gemma 4 (dense text models): QK-norm, weightless V-norm, post norms, attention scale 1, a
// per-layer output scale, final softcapping, and different geometry on sliding vs full layers
// (head_dim, KV heads, RoPE dims and base). Full layers rotate with proportional RoPE through the
// rope_freqs tensor and may have no V projection (V = K). Per-layer embeddings and MoE are refused.
#include <cmath>

#include "model/families/families.h"

namespace glia::families {

status fill_gemma4(const arch_metadata& md, family_profile& p) {
  GLIA_TRY(fill_gemma(md, p));
  p.qk_norm = true;
  p.v_norm = true;
  p.post_attn_norm = true;
  p.post_ffn_norm = true;
  p.layer_output_scale = true;
  auto per_layer = md.get_int("embedding_length_per_layer_input", 0);
  GLIA_TRY(per_layer);
  if (*per_layer != 0)
    return make_error("gemma4: per-layer embeddings ({} = {}) are not supported", md.key("embedding_length_per_layer_input"), *per_layer);
  if (md.has("expert_count") && *md.get_int("expert_count", 0) > 0)
    return make_error("gemma4: mixture-of-experts models ({} = {}) are not supported", md.key("expert_count"), *md.get_int("expert_count", 0));
  auto shared_kv = md.get_int("attention.shared_kv_layers", 0);
  GLIA_TRY(shared_kv);
  if (*shared_kv != 0)
    return make_error("gemma4: KV sharing across layers ({} = {}) is not supported", md.key("attention.shared_kv_layers"), *shared_kv);

  auto final_cap = md.get_float("final_logit_softcapping", 0.0);
  GLIA_TRY(final_cap);
  auto attn_cap = md.get_float("attn_logit_softcapping", 0.0);
  GLIA_TRY(attn_cap);
  if (*attn_cap < 0 || *final_cap < 0 || !std::isfinite(*attn_cap) || !std::isfinite(*final_cap))
    return make_error("gemma4: softcap values must be non-negative numbers (attention {}, final {})", *attn_cap, *final_cap);
  p.final_softcap = float(*final_cap);
  p.attn_softcap = float(*attn_cap);

  auto window = md.get_int("attention.sliding_window", 512);
  GLIA_TRY(window);
  if (*window <= 0) return make_error("metadata key {}: window {} must be positive", md.key("attention.sliding_window"), *window);
  auto sliding = sliding_layers(md, p.n_layer, 6);
  GLIA_TRY(sliding);
  const layer_profile full = p.layers[0];
  auto hd_k_swa = md.get_int("attention.key_length_swa", full.head_dim_k);
  GLIA_TRY(hd_k_swa);
  auto hd_v_swa = md.get_int("attention.value_length_swa", *hd_k_swa);
  GLIA_TRY(hd_v_swa);
  auto rot_swa = md.get_int("rope.dimension_count_swa", *hd_k_swa);
  GLIA_TRY(rot_swa);
  auto base_swa = md.get_float("rope.freq_base_swa", 10000.0);
  GLIA_TRY(base_swa);
  if (!(*base_swa > 0) || !std::isfinite(*base_swa))
    return make_error("metadata key {}: RoPE base must be a positive number, found {}", md.key("rope.freq_base_swa"), *base_swa);
  auto scale = md.get_float("attention.scale", 1.0);
  GLIA_TRY(scale);
  const bool has_rope_freqs = md.file().find_tensor("rope_freqs.weight") != nullptr;

  for (int il = 0; il < p.n_layer; ++il) {
    auto& l = p.layers[size_t(il)];
    l.sliding = (*sliding)[size_t(il)];
    l.attn_scale = float(*scale);
    if (l.sliding) {
      l.window = int(*window);
      l.head_dim_k = int(*hd_k_swa);
      l.head_dim_v = int(*hd_v_swa);
      l.rope.n_rot = int(*rot_swa);
      l.rope.freq_base = float(*base_swa);
      l.rope.freq_scale = 1.0f;
    } else {
      l.use_rope_freqs = has_rope_freqs;
      const std::string v_name = "blk." + std::to_string(il) + ".attn_v.weight";
      l.v_from_k = md.file().find_tensor(v_name) == nullptr;
    }
  }
  return {};
}

}  // namespace glia::families
