// The op interface between the model (which knows families and layers) and kernels (which know
// types and loops). Every op has a reference implementation in backend/ref (plain scalar loops,
// obviously correct) and optimized twins (backend/cpu, later cuda); tests/backend_ops compares them.
//
// Shapes are written row-major with the fastest dimension last: x [n_tok, n] means n_tok rows of n
// contiguous floats.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "quant/types.h"

namespace glia {

// A weight matrix as stored in the file: n_out rows of n_in elements of `type` (ggml ne0 = n_in).
struct weight_view {
  dtype type = dtype::f32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  const void* data = nullptr;
  size_t row_stride = 0;  // bytes between rows
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + size_t(r) * row_stride; }
};

enum class rope_style { normal, neox };  // pairs (2i, 2i+1) or (i, i + n_rot/2)

// Rotary embedding of one layer. Frequency of pair i: theta_i = pos * freq_scale * base^(-2i/n_rot)
// / freq_factors[i], with YaRN interpolation when ext_factor != 0 (as ggml_rope_ext computes it).
struct rope_params {
  int n_rot = 0;  // rotated dims per head (<= head_dim); the rest pass through
  rope_style style = rope_style::normal;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;  // [n_rot/2] or null
  float ext_factor = 0.0f;              // YaRN ramp mix (0 = off)
  float attn_factor = 1.0f;             // multiplies cos and sin
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;
};

// One layer's KV cache. Slots hold keys/values of `n_kv_head` heads; slot_pos[s] is the position
// stored in slot s (-1 if empty). Full-attention layers have one slot per context position;
// sliding-window layers keep a ring (slot = pos % n_slots).
struct kv_layer_view {
  dtype type = dtype::f16;  // f16 or f32
  void* k = nullptr;        // [n_slots, n_kv_head, head_dim_k]
  void* v = nullptr;        // [n_slots, n_kv_head, head_dim_v]
  int32_t* slot_pos = nullptr;
  int64_t n_slots = 0;
  int n_kv_head = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
};

struct attention_params {
  int n_head = 0;
  float scale = 1.0f;    // multiplies q.k
  float softcap = 0.0f;  // scores become cap * tanh(s / cap) when > 0
  int window = 0;        // sliding window: key p0 visible from p1 iff 0 <= p1 - p0 < window (0 = full)
};

enum class activation { silu, gelu_tanh };

class backend {
 public:
  virtual ~backend() = default;
  virtual std::string name() const = 0;

  // out[t, :] = dequantized row ids[t] of `table` (embedding lookup).
  virtual void get_rows(const weight_view& table, const int32_t* ids, int64_t n_ids, float* out) = 0;

  // Readies a weight matrix for many matmuls, e.g. repacks it into the layout the backend's kernels
  // read fastest (a copy the backend keeps; later matmuls with a view of the same data and shape use
  // it). Optional: matmul gives the same bits with or without it. w's data must stay valid while
  // the backend is used. Returns the bytes the backend now holds for w (0: nothing to prepare).
  virtual size_t prepare_weight(const weight_view& /*w*/) { return 0; }

  // y [n_tok, w.n_out] = x [n_tok, w.n_in] . w^T. Activations are converted to the weight type's
  // dot_type first (see quant/types.h). Row t of y never depends on the other rows (batch invariance).
  virtual void matmul(const weight_view& w, const float* x, int64_t n_tok, float* y) = 0;

  // ys[i] [n_tok, ws[i].n_out] = x . ws[i]^T for matrices with the same n_in that read the same input
  // (q, k and v; gate and up): the same bits as one matmul each, which is what this default does; a
  // backend may convert x once and run all of them as one job.
  virtual void matmul_shared(std::span<const weight_view> ws, const float* x, int64_t n_tok,
                             std::span<float* const> ys) {
    for (size_t i = 0; i < ws.size(); ++i) matmul(ws[i], x, n_tok, ys[i]);
  }

  // A hint that the caller's next matmul (or matmul_shared) reads these matrices: a backend may start
  // bringing them into cache while the caller does other work in between (norms, attention). No
  // effect on any result.
  virtual void prefetch_weights(std::span<const weight_view> /*next*/) {}

  // y [n_rows, n] = x / rms(x) * w (w [n], or no weight when null). In place allowed.
  virtual void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) = 0;

  // x [n_tok, n_head, head_dim] rotated in place; positions [n_tok].
  virtual void rope(float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* positions,
                    const rope_params& p) = 0;

  // Writes k [n_tok, n_kv_head, head_dim_k] and v [n_tok, n_kv_head, head_dim_v] into the slots of
  // their positions (slot = pos % n_slots).
  virtual void kv_store(const kv_layer_view& kv, const float* k, const float* v, const int32_t* positions,
                        int64_t n_tok) = 0;

  // out [n_tok, n_head, head_dim_v] = softmax(mask(softcap(scale * q . K^T))) . V over the cached
  // slots; query t at positions[t] sees a slot whose position p satisfies p <= positions[t] (and the
  // window). GQA: query head h reads kv head h / (n_head / n_kv_head). q [n_tok, n_head, head_dim_k].
  virtual void attention(const kv_layer_view& kv, const float* q, const int32_t* positions, int64_t n_tok,
                         const attention_params& p, float* out) = 0;

  // out [n_tok, n] = act(gate) * up.
  virtual void glu(const float* gate, const float* up, float* out, int64_t n_tok, int64_t n, activation act) = 0;

  // out[i] = a[i] + b[i] for i < n.
  virtual void add(const float* a, const float* b, float* out, int64_t n) = 0;
  // x [n_rows, n] += bias [n].
  virtual void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n) = 0;
  // x[i] *= s.
  virtual void scale(float* x, float s, int64_t n) = 0;
  // x[i] = cap * tanh(x[i] / cap).
  virtual void softcap(float* x, float cap, int64_t n) = 0;
};

// Backends by name: "ref" (scalar reference), "cpu" (optimized, multithreaded).
// n_threads <= 0 means one per hardware core. repack_weights = false makes the CPU backend's
// prepare_weight a no-op (its kernels then read the file's layout; same bits, slower).
std::unique_ptr<backend> make_ref_backend();
std::unique_ptr<backend> make_cpu_backend(int n_threads, bool repack_weights = true);

}  // namespace glia
