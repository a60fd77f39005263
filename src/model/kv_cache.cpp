#include "model/kv_cache.h"

#include <algorithm>
#include <atomic>

namespace glia {
namespace {

int64_t slots_for(const layer_profile& l, int n_ctx, int ring_batch) {
  if (!l.sliding || l.window <= 0) return n_ctx;
  return std::min<int64_t>(n_ctx, int64_t(l.window) + ring_batch - 1);
}

size_t elem_bytes(dtype t) { return t == dtype::f32 ? 4 : 2; }

}  // namespace

size_t kv_cache::bytes_needed(const family_profile& p, int n_ctx, int n_ubatch, dtype type, kv_order order, int min_ring_batch) {
  size_t total = 0;
  for (const auto& l : p.layers) {
    const int64_t slots = slots_for(l, n_ctx, std::max(n_ubatch, min_ring_batch));
    total += size_t(kv_buffer_elements(order, kv_part::k, slots, l.n_head_kv, l.head_dim_k) +
                    kv_buffer_elements(order, kv_part::v, slots, l.n_head_kv, l.head_dim_v)) *
             elem_bytes(type);
  }
  return total;
}

size_t kv_cache::bytes_read(const family_profile& p, int64_t n_visible, dtype type) {
  size_t total = 0;
  for (const auto& l : p.layers) {
    const int64_t seen = l.sliding && l.window > 0 ? std::min<int64_t>(n_visible, l.window) : n_visible;
    total += size_t(std::max<int64_t>(seen, 0)) * size_t(l.n_head_kv) * size_t(l.head_dim_k + l.head_dim_v) * elem_bytes(type);
  }
  return total;
}

result<kv_cache> kv_cache::create(const family_profile& p, int n_ctx, int n_ubatch, dtype type, backend& b, int min_ring_batch) {
  static std::atomic<uint64_t> next_id{1};
  if (type != dtype::f16 && type != dtype::f32) return make_error("KV cache type must be f16 or f32");
  if (n_ctx <= 0) return make_error("context size {} must be positive", n_ctx);
  if (n_ubatch <= 0) return make_error("batch size {} must be positive", n_ubatch);
  kv_cache c;
  c.b_ = &b;
  c.id_ = next_id++;
  c.n_ctx_ = n_ctx;
  c.n_ubatch_ = n_ubatch;
  c.ring_batch_ = std::max(n_ubatch, min_ring_batch);
  c.type_ = type;
  const kv_order order = b.kv_layout();
  for (const auto& l : p.layers) {
    layer_store s;
    s.n_slots = slots_for(l, n_ctx, c.ring_batch_);
    s.n_kv_head = l.n_head_kv;
    s.head_dim_k = l.head_dim_k;
    s.head_dim_v = l.head_dim_v;
    s.k = b.alloc(size_t(kv_buffer_elements(order, kv_part::k, s.n_slots, l.n_head_kv, l.head_dim_k)) * elem_bytes(type));
    s.v = b.alloc(size_t(kv_buffer_elements(order, kv_part::v, s.n_slots, l.n_head_kv, l.head_dim_v)) * elem_bytes(type));
    s.slot_pos = b.alloc(size_t(s.n_slots) * sizeof(int32_t));
    c.layers_.push_back(std::move(s));
  }
  c.clear();
  return c;
}

kv_layer_view kv_cache::layer(int il) {
  layer_store& s = layers_[size_t(il)];
  kv_layer_view v;
  v.type = type_;
  v.k = s.k.data();
  v.v = s.v.data();
  v.slot_pos = s.slot_pos.as<int32_t>();
  v.n_slots = s.n_slots;
  // A position's slot is pos % n_slots (ref::kv_store_token), so no slot past the highest one is used.
  v.n_live = std::min<int64_t>(s.n_slots, int64_t(top_pos_) + 1);
  v.n_kv_head = s.n_kv_head;
  v.head_dim_k = s.head_dim_k;
  v.head_dim_v = s.head_dim_v;
  v.order = b_->kv_layout();  // the order the backend stored in
  return v;
}

size_t kv_cache::bytes() const {
  size_t total = 0;
  for (const auto& s : layers_) total += s.k.bytes() + s.v.bytes();
  return total;
}

bool kv_cache::truncate(int32_t pos) {
  for (const auto& s : layers_) {
    if (s.n_slots >= n_ctx_) continue;  // full layer: every position has its own slot
    // The next token at `pos` sees positions down to pos - (window - 1); a ring of n_slots holds the
    // last n_slots positions stored, so it still has them iff max_stored - n_slots < pos - window + 1.
    // The window is not stored here, but n_slots - ring_batch + 1 is.
    const int64_t window = s.n_slots - ring_batch_ + 1;
    int32_t max_stored = -1;
    for (int32_t p : read_slots(s)) max_stored = std::max(max_stored, p);
    if (max_stored >= pos && int64_t(max_stored) - s.n_slots > int64_t(pos) - window) return false;
  }
  std::vector<std::vector<int32_t>> kept;  // alive until the uploads are done
  for (auto& s : layers_) {
    std::vector<int32_t>& slots = kept.emplace_back(read_slots(s));
    for (auto& p : slots)
      if (p >= pos) p = -1;
    upload_slots(s, slots);
  }
  b_->synchronize();
  top_pos_ = std::min(top_pos_, pos - 1);
  return true;
}

void kv_cache::clear() {
  int64_t most = 0;
  for (const auto& s : layers_) most = std::max(most, s.n_slots);
  const std::vector<int32_t> empty(size_t(most), -1);
  for (auto& s : layers_) upload_slots(s, empty);
  b_->synchronize();  // the uploads may be asynchronous and `empty` is about to go away
  top_pos_ = -1;
}

std::vector<int32_t> kv_cache::read_slots(const layer_store& s) const {
  std::vector<int32_t> slots(size_t(s.n_slots));
  b_->download(slots.data(), s.slot_pos.data(), slots.size() * sizeof(int32_t));
  return slots;
}

void kv_cache::upload_slots(layer_store& s, const std::vector<int32_t>& slots) {
  b_->upload(s.slot_pos.data(), slots.data(), size_t(s.n_slots) * sizeof(int32_t));
}

}  // namespace glia
