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
    for (const weight_view* v : l.matrices()) prepare(*v);
  prepare(w.output);
  // The small vectors and the embedding table are read by ops too: a device backend copies them.
  auto prepare_vector = [&](const std::vector<float>& v) {
    if (!v.empty()) b_.prepare_data(v.data(), v.size() * sizeof(float));
  };
  for (const layer_weights& l : w.layers)
    for (const auto* v : l.vectors()) prepare_vector(*v);
  prepare_vector(w.output_norm);
  prepare_vector(w.rope_freqs);
  if (w.token_embd.data) {
    const size_t bytes = w.token_embd.row_stride * size_t(w.token_embd.n_out);
    b_.prepare_data(w.token_embd.data, bytes);
    // Read in place a row per new token (mapped lazily, each new page cost a page fault of 10-90 us,
    // at times milliseconds, in a decode step of ~20 ms; session 24 in bench/RESULTS.md). After the
    // release above when the LM head shares the table.
    if (b_.host_memory() && m.file) m.file->map_pages_now(w.token_embd.data, bytes);
  }
  prepare_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

forward_pass::~forward_pass() { drop_recordings(); }

void forward_pass::drop_recordings() {
  for (auto& [key, step] : recorded_)
    if (step.id >= 0) b_.drop_recording(step.id);
  recorded_.clear();
}

// Buffers only grow, and every recording refers to them, so growing forgets the recordings.
void forward_pass::ensure_scratch(int64_t n_rows) {
  if (n_rows <= s_.rows_cap) return;
  drop_recordings();
  const family_profile& p = m_.profile;
  int64_t q_dim = 0, k_dim = 0, v_dim = 0, attn_dim = 0, n_ff = 0;
  for (int il = 0; il < p.n_layer; ++il) {
    const layer_profile& l = p.layers[size_t(il)];
    q_dim = std::max(q_dim, int64_t(l.n_head) * l.head_dim_k);
    k_dim = std::max(k_dim, int64_t(l.n_head_kv) * l.head_dim_k);
    v_dim = std::max(v_dim, int64_t(l.n_head_kv) * l.head_dim_v);
    attn_dim = std::max(attn_dim, int64_t(l.n_head) * l.head_dim_v);
    n_ff = std::max(n_ff, m_.weights.layers[size_t(il)].n_ff);
  }
  const auto floats = [&](int64_t cols) { return b_.alloc(size_t(n_rows * cols) * sizeof(float)); };
  s_.x = floats(p.n_embd);
  s_.h = floats(p.n_embd);
  s_.o = floats(p.n_embd);
  s_.q = floats(q_dim);
  s_.k = floats(k_dim);
  s_.v = floats(std::max(v_dim, k_dim));
  s_.attn = floats(attn_dim);
  s_.gate = floats(n_ff);
  s_.up = floats(n_ff);
  if (!b_.host_memory()) s_.logits = floats(p.n_vocab);
  s_.tokens_dev = b_.alloc(size_t(n_rows) * sizeof(int32_t));
  s_.pos_dev = b_.alloc(size_t(n_rows) * sizeof(int32_t));
  if (!s_.nonfinite.data()) s_.nonfinite = b_.alloc(size_t(p.n_layer) * sizeof(nonfinite_record));
  s_.rows_cap = n_rows;
}

void forward_pass::tap(const char* name, int layer, const float* data, int64_t n_rows, int64_t n_cols) const {
  if (!tap_) return;
  const std::span<const int32_t> pos(s_.pos.data(), size_t(n_rows));
  if (b_.host_memory()) {
    tap_(name, layer, data, n_rows, n_cols, pos);
    return;
  }
  std::vector<float> host(size_t(n_rows * n_cols));
  b_.download(host.data(), data, host.size() * sizeof(float));
  tap_(name, layer, host.data(), n_rows, n_cols, pos);
}

// Each layer's output was scanned into a record as the chunk ran; the first layer with a
// non-finite value is the one reported.
status forward_pass::check_records(int64_t n) const {
  const family_profile& p = m_.profile;
  std::vector<nonfinite_record> recs(size_t(p.n_layer));
  b_.download(recs.data(), s_.nonfinite.data(), recs.size() * sizeof(nonfinite_record));
  for (int il = 0; il < p.n_layer; ++il) {
    const nonfinite_record& r = recs[size_t(il)];
    if (r.index >= 0 && r.index < n * p.n_embd)
      return make_error("non-finite value ({}) in the output of layer {} at position {}", r.value, il,
                        s_.pos[size_t(r.index / p.n_embd)]);
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
  return run_rows(cache, tokens, pos0, all_logits, false, logits);
}

status forward_pass::run_hidden(kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0, std::vector<float>& hidden) {
  // The rows travel through the logits' buffer.
  if (m_.profile.n_embd > m_.profile.n_vocab) return make_error("hidden states wider than the vocabulary are not supported");
  return run_rows(cache, tokens, pos0, true, true, hidden);
}

status forward_pass::run_rows(kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0, bool all_logits, bool hidden,
                              std::vector<float>& logits) {
  const family_profile& p = m_.profile;
  GLIA_TRY(validate(cache, tokens, pos0));
  const int64_t n = int64_t(tokens.size());
  const int64_t width = hidden ? p.n_embd : p.n_vocab;
  logits.assign(size_t(all_logits ? n : 1) * size_t(width), 0.0f);
  s_.hidden_out = hidden;
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
    float* out = all_logits ? logits.data() + start * width : logits.data();
    status st = run_chunk(out);
    if (!st) {
      s_.hidden_out = false;
      return st;
    }
  }
  s_.hidden_out = false;
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
    for (int64_t r = sg.all_logits ? row0 : int64_t(s_.tokens.size()) - 1; r < int64_t(s_.tokens.size()); ++r) s_.out_rows.push_back(r);
  }
  logits.assign(s_.out_rows.size() * size_t(p.n_vocab), 0.0f);
  return run_chunk(logits.data());
}

status forward_pass::run_chunk(float* logits_out) {
  const family_profile& p = m_.profile;
  const int64_t n = int64_t(s_.tokens.size());
  ensure_scratch(n);
  b_.upload(s_.tokens_dev.data(), s_.tokens.data(), size_t(n) * sizeof(int32_t));
  b_.upload(s_.pos_dev.data(), s_.pos.data(), size_t(n) * sizeof(int32_t));
  const int64_t rows = int64_t(s_.out_rows.size());
  const int64_t width = s_.hidden_out ? p.n_embd : p.n_vocab;
  float* logits = b_.host_memory() ? logits_out : buf(s_.logits);
  for (const segment_rows& sg : s_.segs) sg.cache->will_store(s_.pos[size_t(sg.row0 + sg.n - 1)]);
  if (n == 1) ++one_token_steps_;
  if (replay_step(logits)) ++replayed_steps_;
  else issue_chunk(logits);
  if (rows > 0 && !b_.host_memory()) b_.download(logits_out, logits, size_t(rows * width) * sizeof(float));
  GLIA_TRY(check_records(n));
  if (tap_ && rows > 0 && !s_.hidden_out) {
    std::vector<int32_t> out_pos;
    for (int64_t r : s_.out_rows) out_pos.push_back(s_.pos[size_t(r)]);
    tap_("logits", -1, logits_out, rows, p.n_vocab, out_pos);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      if (!std::isfinite(logits_out[r * width + c]))
        return make_error("non-finite {} ({}) at position {}, {} {}", s_.hidden_out ? "hidden value" : "logit", logits_out[r * width + c],
                          s_.pos[size_t(s_.out_rows[size_t(r)])], s_.hidden_out ? "dimension" : "token", c);
  return {};
}

// A one-token step of one sequence is the same ops with the same pointers every time (only the
// token and position in the backend's memory change), so a backend that can record runs it as one
// submission: per-op launch costs would otherwise dominate small models on a GPU.
bool forward_pass::replay_step(float* logits) {
  if (s_.tokens.size() != 1 || s_.segs.size() != 1 || s_.hidden_out || tap_ || hook_ || b_.host_memory()) return false;
  recorded_step& step = recorded_[{s_.segs[0].cache->id(), int64_t(s_.out_rows.size())}];
  if (step.id >= 0 && b_.replay(step.id)) return true;
  if (step.id >= 0) b_.drop_recording(step.id);
  step.id = -1;
  if (!step.ran_once || step.failures >= 2) {
    step.ran_once = true;
    return false;
  }
  if (!b_.begin_recording()) return false;
  issue_chunk(logits);
  step.id = b_.end_recording();
  if (step.id < 0) ++step.failures;
  return step.id >= 0 && b_.replay(step.id);
}

void forward_pass::issue_chunk(float* logits) {
  const family_profile& p = m_.profile;
  const model_weights& w = m_.weights;
  const int64_t n = int64_t(s_.tokens.size());
  const int64_t n_embd = p.n_embd;
  float* x = buf(s_.x);
  float* h = buf(s_.h);
  {
    op_scope t(hook_, "embedding");
    b_.get_rows(w.token_embd, s_.tokens_dev.as<int32_t>(), n, x);
    if (p.embed_scale != 1.0f) b_.scale(x, p.embed_scale, n * n_embd);
  }
  tap("inp_embd", -1, x, n, n_embd);

  nonfinite_record* recs = s_.nonfinite.as<nonfinite_record>();
  for (int il = 0; il < p.n_layer; ++il) {
    attention_block(il, n);
    ffn_block(il, n);
    const float out_scale = w.layers[size_t(il)].output_scale.value_or(1.0f);
    if (out_scale != 1.0f) {
      op_scope t(hook_, "layer_scale");
      b_.scale(x, out_scale, n * n_embd);
    }
    tap("l_out", il, x, n, n_embd);
    b_.find_nonfinite(x, n * n_embd, recs + il);
  }
  if (s_.out_rows.empty()) return;

  // Only the rows whose logits are wanted go through the final norm and the LM head; they are
  // gathered first when they are not one contiguous run at the end.
  const int64_t rows = int64_t(s_.out_rows.size());
  const int64_t first = s_.out_rows.front();
  const bool contiguous = s_.out_rows.back() - first + 1 == rows;
  const float* xr = x + first * n_embd;
  if (!contiguous) {
    float* o = buf(s_.o);
    for (int64_t r = 0; r < rows; ++r)
      b_.copy(o + r * n_embd, x + s_.out_rows[size_t(r)] * n_embd, size_t(n_embd) * sizeof(float));
    xr = o;
  }
  {
    op_scope t(hook_, "final_norm");
    b_.rms_norm(xr, w.output_norm.data(), h, rows, n_embd, p.norm_eps);
  }
  if (s_.hidden_out) {
    b_.copy(logits, h, size_t(rows * n_embd) * sizeof(float));
    return;
  }
  {
    op_scope t(hook_, "lm_head");
    b_.matmul(w.output, h, rows, logits);
    if (p.final_softcap > 0.0f) b_.softcap(logits, p.final_softcap, rows * p.n_vocab);
  }
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
  float *x = buf(s_.x), *h = buf(s_.h), *q = buf(s_.q), *k = buf(s_.k), *v = buf(s_.v), *o = buf(s_.o);
  float* attn = buf(s_.attn);
  const int32_t* positions = s_.pos_dev.as<int32_t>();

  {
    op_scope t(hook_, "attn_norm");
    b_.rms_norm(x, w.attn_norm.data(), h, n, n_embd, p.norm_eps);
  }
  tap("attn_norm", il, h, n, n_embd);
  {
    op_scope t(hook_, "qkv_proj");
    const weight_view ws[] = {w.wq, w.wk, w.wv};
    float* const ys[] = {q, k, v};
    b_.matmul_shared(std::span(ws, l.v_from_k ? 2 : 3), h, n, std::span(ys, l.v_from_k ? 2 : 3));
    b_.prefetch_weights(std::span(&w.wo, 1));
    if (l.v_from_k) b_.copy(v, k, size_t(n * k_dim) * sizeof(float));
    if (p.qkv_bias) {
      b_.add_bias(q, w.bq.data(), n, q_dim);
      b_.add_bias(k, w.bk.data(), n, k_dim);
      b_.add_bias(v, w.bv.data(), n, v_dim);
    }
  }
  if (p.qk_norm || p.v_norm) {
    op_scope t(hook_, "qk_norm");
    if (p.qk_norm) {
      b_.rms_norm(q, w.q_norm.data(), q, n * l.n_head, l.head_dim_k, p.norm_eps);
      b_.rms_norm(k, w.k_norm.data(), k, n * l.n_head_kv, l.head_dim_k, p.norm_eps);
    }
    if (p.v_norm) b_.rms_norm(v, nullptr, v, n * l.n_head_kv, l.head_dim_v, p.norm_eps);
  }
  {
    op_scope t(hook_, "rope");
    rope_params rope = l.rope;
    if (l.use_rope_freqs) rope.freq_factors = m_.weights.rope_freqs.data();
    b_.rope(q, n, l.n_head, l.head_dim_k, positions, rope);
    b_.rope(k, n, l.n_head_kv, l.head_dim_k, positions, rope);
  }
  tap("q", il, q, n, q_dim);
  tap("k", il, k, n, k_dim);
  tap("v", il, v, n, v_dim);
  attention_params ap;
  ap.n_head = l.n_head;
  ap.scale = l.attn_scale;
  ap.softcap = p.attn_softcap;
  ap.window = l.sliding ? l.window : 0;
  const int64_t attn_dim = int64_t(l.n_head) * l.head_dim_v;
  // Each sequence stores its keys/values in, and attends over, its own cache.
  for (const segment_rows& sg : s_.segs) {
    const kv_layer_view kv = sg.cache->layer(il);
    const int32_t* pos = positions + sg.row0;
    {
      op_scope t(hook_, "kv_append");
      b_.kv_store(kv, k + sg.row0 * k_dim, v + sg.row0 * v_dim, pos, sg.n);
    }
    {
      op_scope t(hook_, "attention");
      b_.attention(kv, q + sg.row0 * q_dim, pos, sg.n, ap, attn + sg.row0 * attn_dim);
    }
  }
  tap("attn_out", il, attn, n, int64_t(l.n_head) * l.head_dim_v);
  {
    op_scope t(hook_, "out_proj");
    b_.matmul(w.wo, attn, n, o);
    const weight_view ffn_in[] = {w.ffn_gate, w.ffn_up};
    b_.prefetch_weights(ffn_in);
  }
  if (p.post_attn_norm) {
    op_scope t(hook_, "post_norm");
    b_.rms_norm(o, w.post_attn_norm.data(), o, n, n_embd, p.norm_eps);
  }
  {
    op_scope t(hook_, "residual");
    b_.add(x, o, x, n * n_embd);
  }
  tap("attn_residual", il, x, n, n_embd);
}

void forward_pass::ffn_block(int il, int64_t n) {
  const family_profile& p = m_.profile;
  const layer_weights& w = m_.weights.layers[size_t(il)];
  const int64_t n_embd = p.n_embd;
  float *x = buf(s_.x), *h = buf(s_.h), *o = buf(s_.o), *gate = buf(s_.gate), *up = buf(s_.up);
  {
    op_scope t(hook_, "ffn_norm");
    b_.rms_norm(x, w.ffn_norm.data(), h, n, n_embd, p.norm_eps);
  }
  tap("ffn_norm", il, h, n, n_embd);
  {
    op_scope t(hook_, "ffn");
    b_.matmul_glu(w.ffn_gate, w.ffn_up, h, n, p.ffn_act, gate, up, std::span(&w.ffn_down, 1));
    b_.matmul(w.ffn_down, gate, n, o);
    prefetch_after_layer(il);
  }
  if (p.post_ffn_norm) {
    op_scope t(hook_, "post_norm");
    b_.rms_norm(o, w.post_ffn_norm.data(), o, n, n_embd, p.norm_eps);
  }
  tap("ffn_out", il, o, n, n_embd);
  {
    op_scope t(hook_, "residual");
    b_.add(x, o, x, n * n_embd);
  }
}

}  // namespace glia
