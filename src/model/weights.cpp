#include "model/weights.h"

#include <cmath>
#include <string>
#include <unordered_set>

#include "gguf/printable.h"
#include "model/layer_of.h"

namespace glia {
namespace {

std::string shape_str(const gguf::tensor_info& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

class binder {
 public:
  explicit binder(const gguf::file& f) : f_(f) {}

  // A matrix of n_out rows of n_in elements (ggml dims [n_in, n_out]); n_out < 0 accepts any.
  result<weight_view> matrix(const std::string& name, int64_t n_in, int64_t n_out) {
    const gguf::tensor_info* t = f_.find_tensor(name);
    if (!t) return make_error("missing tensor {} (expected shape [{}, {}])", name, n_in, n_out);
    if (t->n_dims != 2 || t->ne[0] != n_in || (n_out >= 0 && t->ne[1] != n_out))
      return make_error("tensor {} has shape {}, expected [{}, {}]", name, shape_str(*t), n_in,
                        n_out >= 0 ? std::to_string(n_out) : std::string("any"));
    const type_traits* tt = find_type(t->type);
    if (!tt || tt->vec_dot == nullptr || tt->dequantize_row == nullptr)
      return make_error("tensor {}: type {} is not supported", name, type_name(t->type));
    bound_.insert(name);
    weight_view w;
    w.type = tt->type;
    w.n_in = t->ne[0];
    w.n_out = t->ne[1];
    w.data = t->data;
    w.row_stride = row_bytes(*tt, w.n_in);
    return w;
  }

  // A vector of n floats (any 1-D type the table can dequantize).
  result<std::vector<float>> vector(const std::string& name, int64_t n) {
    const gguf::tensor_info* t = f_.find_tensor(name);
    if (!t) return make_error("missing tensor {} (expected shape [{}])", name, n);
    if (t->n_elements() != n || t->ne[0] != n) return make_error("tensor {} has shape {}, expected [{}]", name, shape_str(*t), n);
    const type_traits* tt = find_type(t->type);
    if (!tt || tt->dequantize_row == nullptr || n % tt->block_elems != 0)
      return make_error("tensor {}: type {} is not supported", name, type_name(t->type));
    bound_.insert(name);
    std::vector<float> out(static_cast<size_t>(n));
    tt->dequantize_row(t->data, out.data(), n);
    return out;
  }

  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

  // A tensor of the file that nothing bound: the model as glia runs it would differ from the one
  // the file describes (a llama file's attention or FFN biases, which llama.cpp applies; a name no
  // engine knows, which llama.cpp refuses too), so the file is refused rather than run without it.
  status check_all_bound(const std::string& arch) const {
    for (const auto& t : f_.tensors())
      if (!bound_.count(t.name))
        return make_error("tensor {} is not part of a {} model as glia runs it (running without it would change the results)",
                          gguf::detail::printable(t.name), arch);
    return {};
  }

 private:
  const gguf::file& f_;
  std::unordered_set<std::string> bound_;
};

#define GLIA_BIND(dst, expr)                           \
  do {                                                 \
    auto glia_bind_r_ = (expr);                        \
    if (!glia_bind_r_) return glia_bind_r_.take_error(); \
    dst = std::move(*glia_bind_r_);                    \
  } while (0)

result<layer_weights> bind_layer(binder& b, const family_profile& p, int il) {
  const layer_profile& l = p.layers[size_t(il)];
  const std::string pre = "blk." + std::to_string(il) + ".";
  const int64_t n_embd = p.n_embd;
  const int64_t q_out = int64_t(l.n_head) * l.head_dim_k;
  const int64_t k_out = int64_t(l.n_head_kv) * l.head_dim_k;
  const int64_t v_out = int64_t(l.n_head_kv) * l.head_dim_v;
  layer_weights w;
  GLIA_BIND(w.attn_norm, b.vector(pre + "attn_norm.weight", n_embd));
  GLIA_BIND(w.wq, b.matrix(pre + "attn_q.weight", n_embd, q_out));
  GLIA_BIND(w.wk, b.matrix(pre + "attn_k.weight", n_embd, k_out));
  if (!l.v_from_k) GLIA_BIND(w.wv, b.matrix(pre + "attn_v.weight", n_embd, v_out));
  if (p.qkv_bias) {
    GLIA_BIND(w.bq, b.vector(pre + "attn_q.bias", q_out));
    GLIA_BIND(w.bk, b.vector(pre + "attn_k.bias", k_out));
    GLIA_BIND(w.bv, b.vector(pre + "attn_v.bias", v_out));
  }
  if (p.qk_norm) {
    GLIA_BIND(w.q_norm, b.vector(pre + "attn_q_norm.weight", l.head_dim_k));
    GLIA_BIND(w.k_norm, b.vector(pre + "attn_k_norm.weight", l.head_dim_k));
  }
  GLIA_BIND(w.wo, b.matrix(pre + "attn_output.weight", int64_t(l.n_head) * l.head_dim_v, n_embd));
  if (p.post_attn_norm) GLIA_BIND(w.post_attn_norm, b.vector(pre + "post_attention_norm.weight", n_embd));
  GLIA_BIND(w.ffn_norm, b.vector(pre + "ffn_norm.weight", n_embd));
  // The width feed_forward_length gives the layer: a gate of another width means
  // a damaged file or a config.json that disagrees with its weights, which llama.cpp and
  // transformers refuse too.
  GLIA_BIND(w.ffn_gate, b.matrix(pre + "ffn_gate.weight", n_embd, l.n_ff));
  w.n_ff = w.ffn_gate.n_out;
  GLIA_BIND(w.ffn_up, b.matrix(pre + "ffn_up.weight", n_embd, w.n_ff));
  GLIA_BIND(w.ffn_down, b.matrix(pre + "ffn_down.weight", w.n_ff, n_embd));
  if (p.post_ffn_norm) GLIA_BIND(w.post_ffn_norm, b.vector(pre + "post_ffw_norm.weight", n_embd));
  if (p.layer_output_scale && b.has(pre + "layer_output_scale.weight")) {
    std::vector<float> s;
    GLIA_BIND(s, b.vector(pre + "layer_output_scale.weight", 1));
    if (!std::isfinite(s[0])) return make_error("tensor {}layer_output_scale.weight: value {} is not finite", pre, s[0]);
    w.output_scale = s[0];
  }
  return w;
}

}  // namespace

result<model_weights> bind_weights(const gguf::file& f, const family_profile& p) {
  // Layers beyond the block count would be left out silently (a damaged count runs a shallower
  // model); llama.cpp refuses such a file for its tensor count.
  for (const auto& t : f.tensors())
    if (const int il = layer_of(t.name); il >= p.n_layer)
      return make_error("tensor {} belongs to layer {}, but the file's block count is {}", gguf::detail::printable(t.name), il, p.n_layer);
  binder b(f);
  model_weights w;
  GLIA_BIND(w.token_embd, b.matrix("token_embd.weight", p.n_embd, p.n_vocab));
  GLIA_BIND(w.output_norm, b.vector("output_norm.weight", p.n_embd));
  if (b.has("output.weight")) {
    GLIA_BIND(w.output, b.matrix("output.weight", p.n_embd, p.n_vocab));
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }
  bool any_rope_freqs = false;
  int n_rot_freqs = 0;
  for (const auto& l : p.layers)
    if (l.use_rope_freqs) {
      any_rope_freqs = true;
      n_rot_freqs = l.rope.n_rot;
    }
  if (any_rope_freqs) {
    GLIA_BIND(w.rope_freqs, b.vector("rope_freqs.weight", n_rot_freqs / 2));
    for (float v : w.rope_freqs)
      if (!(v > 0.0f)) return make_error("tensor rope_freqs.weight: frequency divisor {} must be positive", v);
    for (const auto& l : p.layers)
      if (l.use_rope_freqs && l.rope.n_rot != n_rot_freqs)
        return make_error("tensor rope_freqs.weight: layers rotate different dimension counts ({} and {})", l.rope.n_rot, n_rot_freqs);
  }
  for (int il = 0; il < p.n_layer; ++il) {
    auto lw = bind_layer(b, p, il);
    if (!lw) return lw.take_error();
    w.layers.push_back(std::move(*lw));
  }
  GLIA_TRY(b.check_all_bound(p.arch));
  return w;
}

}  // namespace glia
