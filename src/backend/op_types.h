// The plain argument types of the backend ops (backend.h): views of weights and KV caches and the
// parameters of RoPE and attention. Kept apart so that CUDA kernel code can include them without
// the host-only headers the backend class needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

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

// What rope_params give for every position alike: theta_i = pos * theta_scale^i, YaRN's
// correction range of pairs [corr_low, corr_high], and the cos/sin magnitude (attn_factor, times
// YaRN's 1 + 0.1 ln(1/freq_scale) when ext_factor != 0). Computed once by ref::rope_constants_for.
struct rope_constants {
  float theta_scale = 1.0f;
  float corr_low = 0.0f, corr_high = 0.0f;
  float mscale = 1.0f;
};

// How a layer's K and V buffers order their elements (a row: one head of one slot, head_dim elements).
// Each backend stores in the order its attention reads best (backend::kv_layout).
enum class kv_order : uint8_t {
  slot_major,  // [n_slots][n_kv_head][head_dim]: a slot's heads side by side
  head_major,  // [n_kv_head][n_slots][head_dim]: one head's rows one stream
  // V as head_major; K [n_kv_head][n_slots / 64][head_dim][64]: each chunk of 64 slots transposed,
  // the slots side by side for every dimension (scores computed with the slots in the lanes need no
  // reduction across lanes). A head spans whole chunks: n_slots rounded up to 64.
  head_major_kt,
};
inline constexpr int64_t kv_kt_chunk = 64;
enum class kv_part : uint8_t { k, v };
// Offset of element d of slot s within one head's K in head_major_kt order.
inline int64_t kv_kt_offset(int64_t slot, int head_dim, int d) {
  return (slot / kv_kt_chunk * head_dim + d) * kv_kt_chunk + slot % kv_kt_chunk;
}

// Elements of a K or V buffer of n_slots slots in order o.
inline int64_t kv_buffer_elements(kv_order o, kv_part part, int64_t n_slots, int n_kv_head, int head_dim) {
  if (o == kv_order::head_major_kt && part == kv_part::k) n_slots = (n_slots + kv_kt_chunk - 1) / kv_kt_chunk * kv_kt_chunk;
  return n_slots * n_kv_head * head_dim;
}

// One layer's KV cache. Slots hold keys/values of `n_kv_head` heads; slot_pos[s] is the position
// stored in slot s (-1 if empty). Full-attention layers have one slot per context position;
// sliding-window layers keep a ring (slot = pos % n_slots).
struct kv_layer_view {
  dtype type = dtype::f16;  // f16 or f32
  void* k = nullptr;        // n_slots x n_kv_head heads of head_dim_k elements, in `order`
  void* v = nullptr;        // n_slots x n_kv_head heads of head_dim_v elements, in `order`
  int32_t* slot_pos = nullptr;
  int64_t n_slots = 0;
  int n_kv_head = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  // Slots [n_live, n_slots) hold no key (none stored there since the cache was cleared), so attention
  // may stop at n_live: a decode step in a large context then costs what the tokens so far cost.
  // Views built by hand may leave every slot live. Backends that replay recorded steps (CUDA)
  // read all n_slots, as a recording cannot follow a changing bound.
  int64_t n_live = std::numeric_limits<int64_t>::max();
  // How k and v order their elements. In the head-major orders where a head's elements start depends
  // on n_slots, so n_slots must stay the buffers' own slot count (bound a view's reach with n_live).
  kv_order order = kv_order::slot_major;

  // Whether the buffer of `part` holds each (slot, head) as one row of head_dim elements.
  bool rows(kv_part part) const { return !(order == kv_order::head_major_kt && part == kv_part::k); }
  // Offset in elements of the row of (slot, head) in a buffer that holds rows (rows(part)).
  int64_t row_offset(int64_t slot, int head, int head_dim) const {
    return (order == kv_order::slot_major ? slot * n_kv_head + head : int64_t(head) * n_slots + slot) * head_dim;
  }
  // Elements from one slot's row of a head to the next slot's.
  int64_t slot_stride(int head_dim) const { return order == kv_order::slot_major ? int64_t(n_kv_head) * head_dim : head_dim; }
  // Offset in elements of element d of (slot, head) in k (part k) or v, whatever the order.
  int64_t offset(kv_part part, int64_t slot, int head, int d) const {
    const int head_dim = part == kv_part::k ? head_dim_k : head_dim_v;
    if (rows(part)) return row_offset(slot, head, head_dim) + d;
    return int64_t(head) * kv_buffer_elements(order, part, n_slots, 1, head_dim) + kv_kt_offset(slot, head_dim, d);
  }
};

struct attention_params {
  int n_head = 0;
  float scale = 1.0f;    // multiplies q.k
  float softcap = 0.0f;  // scores become cap * tanh(s / cap) when > 0
  int window = 0;        // sliding window: key p0 visible from p1 iff 0 <= p1 - p0 < window (0 = full)
};

enum class activation { silu, gelu_tanh };

// Where find_nonfinite reports: index of the first non-finite element (-1: none) and its value.
struct nonfinite_record {
  int64_t index = -1;
  float value = 0.0f;
};

}  // namespace glia
