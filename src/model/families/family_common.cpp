#include "model/families/family_common.h"

#include <algorithm>
#include <cmath>

namespace glia::families {

result<int64_t> arch_metadata::get_int(const std::string& k) const {
  const gguf::value* v = f_.find(key(k));
  if (!v) return make_error("missing metadata key {}", key(k));
  auto i = v->as_int();
  if (!i) return make_error("metadata key {}: expected an integer, found {}", key(k), gguf::value_type_name(v->type));
  return *i;
}

result<int64_t> arch_metadata::get_int(const std::string& k, int64_t fallback) const {
  if (!has(k)) return fallback;
  return get_int(k);
}

result<double> arch_metadata::get_float(const std::string& k, double fallback) const {
  const gguf::value* v = f_.find(key(k));
  if (!v) return fallback;
  auto d = v->as_float();
  if (!d) return make_error("metadata key {}: expected a number, found {}", key(k), gguf::value_type_name(v->type));
  return *d;
}

result<std::string> arch_metadata::get_string(const std::string& k, std::string fallback) const {
  const gguf::value* v = f_.find(key(k));
  if (!v) return fallback;
  const std::string* s = v->as_string();
  if (!s) return make_error("metadata key {}: expected a string, found {}", key(k), gguf::value_type_name(v->type));
  return *s;
}

result<std::vector<int64_t>> arch_metadata::get_per_layer_int(const std::string& k, int n_layer,
                                                              std::optional<int64_t> fallback) const {
  const gguf::value* v = f_.find(key(k));
  if (!v) {
    if (!fallback) return make_error("missing metadata key {}", key(k));
    return std::vector<int64_t>(size_t(n_layer), *fallback);
  }
  if (auto i = v->as_int()) return std::vector<int64_t>(size_t(n_layer), *i);
  const auto* arr = v->as_array();
  if (!arr) return make_error("metadata key {}: expected an integer or an array, found {}", key(k), gguf::value_type_name(v->type));
  if (arr->size() != size_t(n_layer))
    return make_error("metadata key {}: array has {} entries, expected one per layer ({})", key(k), arr->size(), n_layer);
  std::vector<int64_t> out;
  for (const auto& e : *arr) {
    auto i = e.as_int();
    if (!i) return make_error("metadata key {}: array element is {}, expected an integer", key(k), gguf::value_type_name(e.type));
    out.push_back(*i);
  }
  return out;
}

result<std::optional<std::vector<bool>>> arch_metadata::get_per_layer_bool(const std::string& k, int n_layer) const {
  const gguf::value* v = f_.find(key(k));
  if (!v) return std::optional<std::vector<bool>>{};
  const auto* arr = v->as_array();
  if (!arr) return make_error("metadata key {}: expected an array, found {}", key(k), gguf::value_type_name(v->type));
  if (arr->size() != size_t(n_layer))
    return make_error("metadata key {}: array has {} entries, expected one per layer ({})", key(k), arr->size(), n_layer);
  std::vector<bool> out;
  for (const auto& e : *arr) {
    auto b = e.as_bool();
    if (!b) {
      auto i = e.as_int();
      if (!i) return make_error("metadata key {}: array element is {}, expected a bool", key(k), gguf::value_type_name(e.type));
      b = *i != 0;
    }
    out.push_back(*b);
  }
  return std::optional<std::vector<bool>>(std::move(out));
}

namespace {

status read_rope_scaling(const arch_metadata& md, family_profile& p, rope_params& rope) {
  // As llama.cpp reads them: no type means linear (a factor alone scales), and "none" never scales,
  // whatever factor the file also gives.
  auto type = md.get_string("rope.scaling.type", "linear");
  GLIA_TRY(type);
  auto factor = md.get_float("rope.scaling.factor", 0.0);
  GLIA_TRY(factor);
  // Older files give a linear factor under rope.scale_linear.
  auto legacy = md.get_float("rope.scale_linear", 0.0);
  GLIA_TRY(legacy);
  double f = *factor != 0.0 ? *factor : *legacy;
  if (*type == "none" || (*type == "linear" && f == 0.0)) return {};
  if (!(f > 0.0) || !std::isfinite(f))
    return make_error("metadata key {}: rope scaling factor must be a positive number, found {}",
                      md.key(*factor != 0.0 ? "rope.scaling.factor" : "rope.scale_linear"), f);
  if (*type == "linear") {
    rope.freq_scale = float(1.0 / f);
    return {};
  }
  if (*type == "yarn") {
    auto orig = md.get_int("rope.scaling.original_context_length", p.n_ctx_train);
    GLIA_TRY(orig);
    auto beta_fast = md.get_float("rope.scaling.yarn_beta_fast", 32.0);
    GLIA_TRY(beta_fast);
    auto beta_slow = md.get_float("rope.scaling.yarn_beta_slow", 1.0);
    GLIA_TRY(beta_slow);
    auto ext = md.get_float("rope.scaling.yarn_ext_factor", 1.0);
    GLIA_TRY(ext);
    rope.freq_scale = float(1.0 / f);
    rope.ext_factor = float(*ext);
    rope.n_ctx_orig = int(*orig);
    rope.beta_fast = float(*beta_fast);
    rope.beta_slow = float(*beta_slow);
    if (rope.n_ctx_orig <= 0)
      return make_error("metadata key {}: must be positive, found {}", md.key("rope.scaling.original_context_length"), *orig);
    return {};
  }
  return make_error("metadata key {}: rope scaling type '{}' is not supported (none, linear, yarn)",
                    md.key("rope.scaling.type"), *type);
}

}  // namespace

status read_common(const arch_metadata& md, family_profile& p) {
  auto n_layer = md.get_int("block_count");
  GLIA_TRY(n_layer);
  if (*n_layer <= 0 || *n_layer > 4096) return make_error("metadata key {}: {} layers is outside 1..4096", md.key("block_count"), *n_layer);
  p.n_layer = int(*n_layer);
  auto n_embd = md.get_int("embedding_length");
  GLIA_TRY(n_embd);
  if (*n_embd <= 0 || *n_embd > (1 << 20)) return make_error("metadata key {}: {} is outside 1..{}", md.key("embedding_length"), *n_embd, 1 << 20);
  p.n_embd = *n_embd;
  // One width, or one per layer (llama.cpp reads either).
  auto n_ff = md.get_per_layer_int("feed_forward_length", p.n_layer, std::nullopt);
  GLIA_TRY(n_ff);
  for (const int64_t w : *n_ff)
    if (w <= 0 || w > (1 << 22)) return make_error("metadata key {}: {} is outside 1..{}", md.key("feed_forward_length"), w, 1 << 22);
  p.n_ff = *std::max_element(n_ff->begin(), n_ff->end());
  auto n_ctx = md.get_int("context_length", 4096);
  GLIA_TRY(n_ctx);
  if (*n_ctx <= 0) return make_error("metadata key {}: {} is not a positive context length", md.key("context_length"), *n_ctx);
  p.n_ctx_train = int(std::min<int64_t>(*n_ctx, INT32_MAX));

  auto eps = md.get_float("attention.layer_norm_rms_epsilon", 1e-5);
  GLIA_TRY(eps);
  if (!(*eps > 0.0) || !std::isfinite(*eps) || *eps > 1.0)
    return make_error("metadata key {}: epsilon must be in (0, 1], found {}", md.key("attention.layer_norm_rms_epsilon"), *eps);
  p.norm_eps = float(*eps);

  auto n_head = md.get_per_layer_int("attention.head_count", p.n_layer, std::nullopt);
  GLIA_TRY(n_head);
  auto n_head_kv = md.get_per_layer_int("attention.head_count_kv", p.n_layer, std::nullopt);
  if (!md.has("attention.head_count_kv")) n_head_kv = *n_head;
  GLIA_TRY(n_head_kv);

  auto base = md.get_float("rope.freq_base", 10000.0);
  GLIA_TRY(base);
  if (!(*base > 0.0) || !std::isfinite(*base))
    return make_error("metadata key {}: RoPE base must be a positive number, found {}", md.key("rope.freq_base"), *base);

  rope_params rope;
  rope.freq_base = float(*base);
  GLIA_TRY(read_rope_scaling(md, p, rope));

  p.layers.assign(size_t(p.n_layer), layer_profile{});
  for (int il = 0; il < p.n_layer; ++il) {
    layer_profile& l = p.layers[size_t(il)];
    const int64_t nh = (*n_head)[size_t(il)], nkv = (*n_head_kv)[size_t(il)];
    if (nh <= 0 || nh > 4096) return make_error("layer {}: head count {} is outside 1..4096", il, nh);
    if (nkv <= 0 || nkv > nh || nh % nkv != 0)
      return make_error("layer {}: KV head count {} must be positive and divide the head count {}", il, nkv, nh);
    l.n_head = int(nh);
    l.n_head_kv = int(nkv);
    l.n_ff = (*n_ff)[size_t(il)];
    l.rope = rope;
  }
  // Head sizes default to n_embd / n_head of layer 0.
  if (p.n_embd % p.layers[0].n_head != 0 && !md.has("attention.key_length"))
    return make_error("embedding length {} is not a multiple of the head count {}", p.n_embd, p.layers[0].n_head);
  auto hd_k = md.get_int("attention.key_length", p.n_embd / p.layers[0].n_head);
  GLIA_TRY(hd_k);
  auto hd_v = md.get_int("attention.value_length", *hd_k);
  GLIA_TRY(hd_v);
  auto n_rot = md.get_int("rope.dimension_count", *hd_k);
  GLIA_TRY(n_rot);
  for (auto& l : p.layers) {
    l.head_dim_k = int(*hd_k);
    l.head_dim_v = int(*hd_v);
    l.rope.n_rot = int(*n_rot);
    l.attn_scale = 1.0f / std::sqrt(float(*hd_k));
  }
  return {};
}

result<std::vector<bool>> sliding_layers(const arch_metadata& md, int n_layer, int default_period) {
  std::vector<bool> out(size_t(n_layer), false);
  const gguf::value* v = md.file().find(md.key("attention.sliding_window_pattern"));
  int period = default_period;
  if (v) {
    if (auto i = v->as_int()) {
      period = int(*i);
    } else {
      auto arr = md.get_per_layer_bool("attention.sliding_window_pattern", n_layer);
      GLIA_TRY(arr);
      return **arr;
    }
  }
  if (period < 0) return make_error("metadata key {}: period {} is negative", md.key("attention.sliding_window_pattern"), period);
  for (int il = 0; il < n_layer && period > 0; ++il) out[size_t(il)] = il % period < period - 1;
  return out;
}

}  // namespace glia::families
