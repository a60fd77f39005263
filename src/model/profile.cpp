#include "model/profile.h"

#include <algorithm>
#include <cmath>

#include <fmt/ranges.h>

#include "gguf/gguf.h"
#include "model/families/families.h"
#include "model/rope_rows.h"

namespace glia {
namespace {

struct family_entry {
  const char* arch;
  status (*fill)(const families::arch_metadata&, family_profile&);
  // The GGUF convention reorders the checkpoint's Q/K rows for adjacent-pair RoPE (llama.cpp's
  // converter does for "llama" only), so rows kept in checkpoint order can be marked as such.
  bool gguf_interleaves_qk = false;
};

constexpr family_entry kFamilies[] = {
    {"llama", families::fill_llama, true}, {"qwen2", families::fill_qwen2},   {"qwen3", families::fill_qwen3},
    {"gemma", families::fill_gemma},       {"gemma2", families::fill_gemma2}, {"gemma3", families::fill_gemma3},
    {"gemma4", families::fill_gemma4},
};

// Checks that hold for every family once its fill function ran.
status validate(const family_profile& p) {
  for (int il = 0; il < p.n_layer; ++il) {
    const layer_profile& l = p.layers[size_t(il)];
    if (l.head_dim_k <= 0 || l.head_dim_k > 1024 || l.head_dim_v <= 0 || l.head_dim_v > 1024)
      return make_error("layer {}: head sizes (key {}, value {}) must be in 1..1024", il, l.head_dim_k, l.head_dim_v);
    if (l.rope.n_rot < 0 || l.rope.n_rot > l.head_dim_k || l.rope.n_rot % 2 != 0)
      return make_error("layer {}: RoPE dimension count {} must be even and at most the head size {}", il, l.rope.n_rot, l.head_dim_k);
    if (l.v_from_k && l.head_dim_v != l.head_dim_k)
      return make_error("layer {}: V reuses the K projection but value length {} differs from key length {}", il, l.head_dim_v, l.head_dim_k);
    if (!(l.rope.freq_base > 0.0f) || !std::isfinite(l.rope.freq_base))
      return make_error("layer {}: RoPE base {} must be a positive number", il, l.rope.freq_base);
    if (!(l.attn_scale > 0.0f) || !std::isfinite(l.attn_scale))
      return make_error("layer {}: attention scale {} must be a positive number", il, l.attn_scale);
  }
  return {};
}

// glia.rope.checkpoint_order (model/rope_rows.h): Q/K rows in a checkpoint's half-split order, so
// rotated NeoX-style. Any value but a bool is refused: ignoring it would rotate the wrong pairs.
status apply_checkpoint_order(const gguf::file& f, const family_entry& entry, family_profile& p) {
  if (!f.find(key_rope_checkpoint_order)) return {};
  const auto marked = f.get_bool(key_rope_checkpoint_order);
  if (!marked) return make_error("metadata key {} must be a bool", key_rope_checkpoint_order);
  if (!*marked) return {};
  if (!entry.gguf_interleaves_qk)
    return make_error("metadata key {} applies to llama models only; {} keeps Q and K in checkpoint order anyway",
                      key_rope_checkpoint_order, p.arch);
  for (size_t il = 0; il < p.layers.size(); ++il) {
    auto& l = p.layers[il];
    // Interleaving whole heads matches NeoX rotation only when every dimension rotates.
    if (l.rope.n_rot != l.head_dim_k)
      return make_error("metadata key {}: layer {} rotates {} of its {} key dimensions; the mark needs them all", key_rope_checkpoint_order,
                        il, l.rope.n_rot, l.head_dim_k);
    l.rope.style = rope_style::neox;
  }
  p.qk_checkpoint_order = true;
  return {};
}

}  // namespace

int family_profile::max_head_dim() const {
  int m = 0;
  for (const auto& l : layers) m = std::max({m, l.head_dim_k, l.head_dim_v});
  return m;
}

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.emplace_back(f.arch);
  return out;
}

result<family_profile> profile_from_gguf(const gguf::file& f) {
  auto arch = f.get_string("general.architecture");
  if (!arch) return make_error("missing metadata key general.architecture");
  const family_entry* entry = nullptr;
  for (const auto& e : kFamilies)
    if (*arch == e.arch) entry = &e;
  if (!entry)
    return make_error("architecture '{}' is not supported (supported: {})", *arch, fmt::join(supported_architectures(), ", "));
  family_profile p;
  p.arch = *arch;
  p.name = f.get_string("general.name").value_or("");
  GLIA_TRY(entry->fill(families::arch_metadata(f, *arch), p));
  GLIA_TRY(apply_checkpoint_order(f, *entry, p));
  const gguf::tensor_info* embd = f.find_tensor("token_embd.weight");
  if (!embd) return make_error("missing tensor token_embd.weight");
  p.n_vocab = embd->ne[1];
  GLIA_TRY(validate(p));
  return p;
}

}  // namespace glia
