// Per-layer key/value storage. Full-attention layers keep one slot per context position;
// sliding-window layers keep a ring of window + max(n_ubatch, min_ring_batch) - 1 slots, enough for a
// batch of n_ubatch new tokens to be stored before attention without evicting a key any of them
// still sees.
// The storage is the backend's memory (device memory for a GPU backend), so attention reads it in place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/profile.h"

namespace glia {

class kv_cache {
 public:
  // type: dtype::f16 (default in the CLI) or dtype::f32. The memory comes from b, which must
  // outlive the cache.
  // min_ring_batch: rings as large as for a batch of that many tokens even when n_ubatch is smaller.
  // Attention sums a window's keys in slot order, which the ring's size decides: sessions (and bench,
  // to measure what they run) use ring_batch_floor, one size for every -b up to the default 512, so
  // that logits are bit-identical across those -b (they differed in the last bits, and sampled text
  // parted ways after a few dozen tokens). It costs a smaller -b the larger ring's memory and reads.
  static constexpr int ring_batch_floor = 512;
  static result<kv_cache> create(const family_profile& p, int n_ctx, int n_ubatch, dtype type, backend& b, int min_ring_batch = 0);
  // Bytes the cache would take, to check memory before allocating (order: the backend's kv_layout).
  static size_t bytes_needed(const family_profile& p, int n_ctx, int n_ubatch, dtype type, kv_order order, int min_ring_batch = 0);
  // Bytes of K and V that attention reads for one token that sees n_visible positions (itself
  // included; a sliding-window layer sees at most its window).
  static size_t bytes_read(const family_profile& p, int64_t n_visible, dtype type);

  kv_layer_view layer(int il);
  int n_ctx() const { return n_ctx_; }
  int n_ubatch() const { return n_ubatch_; }
  dtype type() const { return type_; }
  size_t bytes() const;
  // Distinct for every cache created in this process (recordings of decode steps are kept per cache).
  uint64_t id() const { return id_; }
  void clear();
  // Positions up to last_pos are about to be stored: slots beyond the highest position stored since
  // clear() hold no key, and the layer views say so (kv_layer_view::n_live).
  void will_store(int32_t last_pos) { top_pos_ = std::max(top_pos_, last_pos); }
  // Forgets positions >= pos. Returns false (and changes nothing) when a sliding-window ring has
  // already overwritten keys that positions from `pos` on would need: the caller must then start over.
  bool truncate(int32_t pos);

 private:
  struct layer_store {
    backend_buffer k, v, slot_pos;
    int64_t n_slots = 0;
    int n_kv_head = 0, head_dim_k = 0, head_dim_v = 0;
  };
  // A layer's slot positions from the backend's memory, or to it (the first n_slots of `slots`,
  // which must stay valid until the backend synchronizes).
  std::vector<int32_t> read_slots(const layer_store& s) const;
  void upload_slots(layer_store& s, const std::vector<int32_t>& slots);

  backend* b_ = nullptr;
  uint64_t id_ = 0;
  std::vector<layer_store> layers_;
  int n_ctx_ = 0;
  int n_ubatch_ = 0;
  int ring_batch_ = 0;  // max(n_ubatch, min_ring_batch)
  dtype type_ = dtype::f16;
  int32_t top_pos_ = -1;  // highest position stored (or about to be) since clear()
};

}  // namespace glia
