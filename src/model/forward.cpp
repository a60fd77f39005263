#include "model/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace glia {
namespace {

// Times an op through the hook (a no-op when none is set).
class op_scope {
 public:
  op_scope(const op_hook& hook, const char* name) : hook_(hook), name_(name) {
    if (hook_) hook_(name_, true);
  }
  ~op_scope() {
    if (hook_) hook_(name_, false);
  }

 private:
  const op_hook& hook_;
  const char* name_;
};

}  // namespace

forward_pass::forward_pass(const model& m, backend& b) : m_(m), b_(b) {
  const auto start = std::chrono::steady_clock::now();
  const model_weights& w = m.weights;
  // The file's pages of a repacked matrix are not read again by this backend, so they leave the
  // resident memory (a mapped file; they return from the page cache if another reader needs them).
  auto prepare = [&](const weight_view& v) {
    if (!v.data) return;
    const size_t held = b_.prepare_weight(v);
    prepared_bytes_ += held;
    if (held > 0 && m.file) m.file->release_pages(v.data, v.row_stride * size_t(v.n_out));
  };
  for (const layer_weights& l : w.layers)
    for (const weight_view* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) prepare(*v);
  prepare(w.output);
  prepare_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void forward_pass::tap(const char* name, int layer, const float* data, int64_t n_rows, int64_t n_cols) const {
  if (tap_) tap_(name, layer, data, n_rows, n_cols, std::span<const int32_t>(s_.pos.data(), size_t(n_rows)));
}

status forward_pass::check_finite(const float* data, int64_t n_rows, int64_t n_cols, int layer, const char* what) const {
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t c = 0; c < n_cols; ++c)
      if (!std::isfinite(data[r * n_cols + c])) {
        if (layer >= 0)
          return make_error("non-finite value ({}) in the {} of layer {} at position {}", data[r * n_cols + c], what, layer, s_.pos[size_t(r)]);
        return make_error("non-finite value ({}) in the {} at position {}", data[r * n_cols + c], what, s_.pos[size_t(r)]);
      }
  return {};
}

status forward_pass::validate(const kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0) const {
  const family_profile& p = m_.profile;
  const int64_t n = int64_t(tokens.size());
  if (n == 0) return make_error("no tokens to evaluate");
  if (pos0 < 0) return make_error("position {} is negative", pos0);
  if (int64_t(pos0) + n > cache.n_ctx())
    return make_error("context overflow: {} tokens at position {} need {} positions, the context holds {}", n, pos0,
                      int64_t(pos0) + n, cache.n_ctx());
  for (int64_t i = 0; i < n; ++i)
    if (tokens[size_t(i)] < 0 || tokens[size_t(i)] >= p.n_vocab)
      return make_error("token id {} at position {} is outside the vocabulary (0..{})", tokens[size_t(i)], pos0 + i, p.n_vocab - 1);
  return {};
}

status forward_pass::run(kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0, bool all_logits,
                         std::vector<float>& logits) {
  const family_profile& p = m_.profile;
  GLIA_TRY(validate(cache, tokens, pos0));
  const int64_t n = int64_t(tokens.size());
  logits.assign(size_t(all_logits ? n : 1) * size_t(p.n_vocab), 0.0f);
  const int64_t ub = cache.n_ubatch();
  for (int64_t start = 0; start < n; start += ub) {
    const int64_t len = std::min(ub, n - start);
    const bool last = start + len == n;
    s_.tokens.assign(tokens.begin() + start, tokens.begin() + start + len);
    s_.pos.resize(size_t(len));
    for (int64_t i = 0; i < len; ++i) s_.pos[size_t(i)] = pos0 + int32_t(start + i);
    s_.segs.assign(1, segment_rows{&cache, 0, len});
    s_.out_rows.clear();
    if (all_logits)
      for (int64_t i = 0; i < len; ++i) s_.out_rows.push_back(i);
    else if (last)
      s_.out_rows.push_back(len - 1);
    float* out = all_logits ? logits.data() + start * p.n_vocab : logits.data();
    GLIA_TRY(run_chunk(out));
  }
  return {};
}

status forward_pass::run_batch(std::span<const sequence_batch> segs, std::vector<float>& logits) {
  const family_profile& p = m_.profile;
  if (segs.empty()) return make_error("no sequences to evaluate");
  s_.tokens.clear();
  s_.pos.clear();
  s_.segs.clear();
  s_.out_rows.clear();
  for (const auto& sg : segs) {
    if (!sg.cache) return make_error("a batch segment has no KV cache");
    GLIA_TRY(validate(*sg.cache, sg.tokens, sg.pos0));
    if (int64_t(sg.tokens.size()) > sg.cache->n_ubatch())
      return make_error("a batch segment has {} tokens, more than the cache's batch size {}", sg.tokens.size(), sg.cache->n_ubatch());
    const int64_t row0 = int64_t(s_.tokens.size());
    s_.tokens.insert(s_.tokens.end(), sg.tokens.begin(), sg.tokens.end());
    for (size_t i = 0; i < sg.tokens.size(); ++i) s_.pos.push_back(sg.pos0 + int32_t(i));
    s_.segs.push_back(segment_rows{sg.cache, row0, int64_t(sg.tokens.size())});
    s_.out_rows.push_back(int64_t(s_.tokens.size()) - 1);
  }
  logits.assign(segs.size() * size_t(p.n_vocab), 0.0f);
  return run_chunk(logits.data());
}

status forward_pass::run_chunk(float* logits_out) {
  const family_profile& p = m_.profile;
  const model_weights& w = m_.weights;
  const int64_t n = int64_t(s_.tokens.size());
  const int64_t n_embd = p.n_embd;
  s_.x.resize(size_t(n * n_embd));
  s_.h.resize(size_t(n * n_embd));
  s_.o.resize(size_t(n * n_embd));

  {
    op_scope t(hook_, "embedding");
    b_.get_rows(w.token_embd, s_.tokens.data(), n, s_.x.data());
    if (p.embed_scale != 1.0f) b_.scale(s_.x.data(), p.embed_scale, n * n_embd);
  }
  tap("inp_embd", -1, s_.x.data(), n, n_embd);

  for (int il = 0; il < p.n_layer; ++il) {
    attention_block(il, n);
    ffn_block(il, n);
    const float out_scale = w.layers[size_t(il)].output_scale;
    if (out_scale != 1.0f) {
      op_scope t(hook_, "layer_scale");
      b_.scale(s_.x.data(), out_scale, n * n_embd);
    }
    tap("l_out", il, s_.x.data(), n, n_embd);
    GLIA_TRY(check_finite(s_.x.data(), n, n_embd, il, "output"));
  }
  if (s_.out_rows.empty()) return {};

  // Only the rows whose logits are wanted go through the final norm and the LM head; they are
  // gathered first when they are not one contiguous run at the end.
  const int64_t rows = int64_t(s_.out_rows.size());
  const int64_t first = s_.out_rows.front();
  const bool contiguous = s_.out_rows.back() - first + 1 == rows;
  const float* xr = s_.x.data() + first * n_embd;
  if (!contiguous) {
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(s_.x.data() + s_.out_rows[size_t(r)] * n_embd, n_embd, s_.o.data() + r * n_embd);
    xr = s_.o.data();
  }
  {
    op_scope t(hook_, "final_norm");
    b_.rms_norm(xr, w.output_norm.data(), s_.h.data(), rows, n_embd, p.norm_eps);
  }
  {
    op_scope t(hook_, "lm_head");
    b_.matmul(w.output, s_.h.data(), rows, logits_out);
    if (p.final_softcap > 0.0f) b_.softcap(logits_out, p.final_softcap, rows * p.n_vocab);
  }
  if (tap_) {
    std::vector<int32_t> out_pos;
    for (int64_t r : s_.out_rows) out_pos.push_back(s_.pos[size_t(r)]);
    tap_("logits", -1, logits_out, rows, p.n_vocab, out_pos);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < p.n_vocab; ++c)
      if (!std::isfinite(logits_out[r * p.n_vocab + c]))
        return make_error("non-finite logit ({}) at position {}, token {}", logits_out[r * p.n_vocab + c], s_.pos[size_t(s_.out_rows[size_t(r)])], c);
  return {};
}

// The next matmul after layer il's: the next layer's q, k, v projections, or the LM head.
void forward_pass::prefetch_after_layer(int il) {
  const family_profile& p = m_.profile;
  if (il + 1 == p.n_layer) {
    b_.prefetch_weights(std::span(&m_.weights.output, 1));
    return;
  }
  const layer_weights& w = m_.weights.layers[size_t(il + 1)];
  const weight_view ws[] = {w.wq, w.wk, w.wv};
  b_.prefetch_weights(std::span(ws, p.layers[size_t(il + 1)].v_from_k ? 2 : 3));
}

void forward_pass::attention_block(int il, int64_t n) {
  const family_profile& p = m_.profile;
  const layer_profile& l = p.layers[size_t(il)];
  const layer_weights& w = m_.weights.layers[size_t(il)];
  const int64_t n_embd = p.n_embd;
  const int64_t q_dim = int64_t(l.n_head) * l.head_dim_k;
  const int64_t k_dim = int64_t(l.n_head_kv) * l.head_dim_k;
  const int64_t v_dim = int64_t(l.n_head_kv) * l.head_dim_v;
  s_.q.resize(size_t(n * q_dim));
  s_.k.resize(size_t(n * k_dim));
  s_.v.resize(size_t(n * v_dim));
  s_.attn.resize(size_t(n * l.n_head * l.head_dim_v));

  {
    op_scope t(hook_, "attn_norm");
    b_.rms_norm(s_.x.data(), w.attn_norm.data(), s_.h.data(), n, n_embd, p.norm_eps);
  }
  tap("attn_norm", il, s_.h.data(), n, n_embd);
  {
    op_scope t(hook_, "qkv_proj");
    const weight_view ws[] = {w.wq, w.wk, w.wv};
    float* const ys[] = {s_.q.data(), s_.k.data(), s_.v.data()};
    b_.matmul_shared(std::span(ws, l.v_from_k ? 2 : 3), s_.h.data(), n, std::span(ys, l.v_from_k ? 2 : 3));
    b_.prefetch_weights(std::span(&w.wo, 1));
    if (l.v_from_k) std::copy(s_.k.begin(), s_.k.end(), s_.v.begin());
    if (p.qkv_bias) {
      b_.add_bias(s_.q.data(), w.bq.data(), n, q_dim);
      b_.add_bias(s_.k.data(), w.bk.data(), n, k_dim);
      b_.add_bias(s_.v.data(), w.bv.data(), n, v_dim);
    }
  }
  if (p.qk_norm || p.v_norm) {
    op_scope t(hook_, "qk_norm");
    if (p.qk_norm) {
      b_.rms_norm(s_.q.data(), w.q_norm.data(), s_.q.data(), n * l.n_head, l.head_dim_k, p.norm_eps);
      b_.rms_norm(s_.k.data(), w.k_norm.data(), s_.k.data(), n * l.n_head_kv, l.head_dim_k, p.norm_eps);
    }
    if (p.v_norm) b_.rms_norm(s_.v.data(), nullptr, s_.v.data(), n * l.n_head_kv, l.head_dim_v, p.norm_eps);
  }
  {
    op_scope t(hook_, "rope");
    rope_params rope = l.rope;
    if (l.use_rope_freqs) rope.freq_factors = m_.weights.rope_freqs.data();
    b_.rope(s_.q.data(), n, l.n_head, l.head_dim_k, s_.pos.data(), rope);
    b_.rope(s_.k.data(), n, l.n_head_kv, l.head_dim_k, s_.pos.data(), rope);
  }
  tap("q", il, s_.q.data(), n, q_dim);
  tap("k", il, s_.k.data(), n, k_dim);
  tap("v", il, s_.v.data(), n, v_dim);
  attention_params ap;
  ap.n_head = l.n_head;
  ap.scale = l.attn_scale;
  ap.softcap = p.attn_softcap;
  ap.window = l.sliding ? l.window : 0;
  const int64_t attn_dim = int64_t(l.n_head) * l.head_dim_v;
  // Each sequence stores its keys/values in, and attends over, its own cache.
  for (const segment_rows& sg : s_.segs) {
    const kv_layer_view kv = sg.cache->layer(il);
    const int32_t* pos = s_.pos.data() + sg.row0;
    {
      op_scope t(hook_, "kv_append");
      b_.kv_store(kv, s_.k.data() + sg.row0 * k_dim, s_.v.data() + sg.row0 * v_dim, pos, sg.n);
    }
    {
      op_scope t(hook_, "attention");
      b_.attention(kv, s_.q.data() + sg.row0 * q_dim, pos, sg.n, ap, s_.attn.data() + sg.row0 * attn_dim);
    }
  }
  tap("attn_out", il, s_.attn.data(), n, int64_t(l.n_head) * l.head_dim_v);
  {
    op_scope t(hook_, "out_proj");
    b_.matmul(w.wo, s_.attn.data(), n, s_.o.data());
    const weight_view ffn_in[] = {w.ffn_gate, w.ffn_up};
    b_.prefetch_weights(ffn_in);
  }
  if (p.post_attn_norm) {
    op_scope t(hook_, "post_norm");
    b_.rms_norm(s_.o.data(), w.post_attn_norm.data(), s_.o.data(), n, n_embd, p.norm_eps);
  }
  {
    op_scope t(hook_, "residual");
    b_.add(s_.x.data(), s_.o.data(), s_.x.data(), n * n_embd);
  }
  tap("attn_residual", il, s_.x.data(), n, n_embd);
}

void forward_pass::ffn_block(int il, int64_t n) {
  const family_profile& p = m_.profile;
  const layer_weights& w = m_.weights.layers[size_t(il)];
  const int64_t n_embd = p.n_embd;
  s_.gate.resize(size_t(n * w.n_ff));
  s_.up.resize(size_t(n * w.n_ff));
  {
    op_scope t(hook_, "ffn_norm");
    b_.rms_norm(s_.x.data(), w.ffn_norm.data(), s_.h.data(), n, n_embd, p.norm_eps);
  }
  tap("ffn_norm", il, s_.h.data(), n, n_embd);
  {
    op_scope t(hook_, "ffn");
    const weight_view ws[] = {w.ffn_gate, w.ffn_up};
    float* const ys[] = {s_.gate.data(), s_.up.data()};
    b_.matmul_shared(ws, s_.h.data(), n, ys);
    b_.prefetch_weights(std::span(&w.ffn_down, 1));
    b_.glu(s_.gate.data(), s_.up.data(), s_.gate.data(), n, w.n_ff, p.ffn_act);
    b_.matmul(w.ffn_down, s_.gate.data(), n, s_.o.data());
    prefetch_after_layer(il);
  }
  if (p.post_ffn_norm) {
    op_scope t(hook_, "post_norm");
    b_.rms_norm(s_.o.data(), w.post_ffn_norm.data(), s_.o.data(), n, n_embd, p.norm_eps);
  }
  tap("ffn_out", il, s_.o.data(), n, n_embd);
  {
    op_scope t(hook_, "residual");
    b_.add(s_.x.data(), s_.o.data(), s_.x.data(), n * n_embd);
  }
}

}  // namespace glia
