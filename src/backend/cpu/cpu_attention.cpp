// Attention over the KV cache for the CPU backend. Work items are (token, KV head) pairs: the query
// heads of a GQA group read the same K and V rows, so an item converts each row once for all of
// them. Within an item, attend streams over the visible slots in chunks with an online softmax
// (Milakov & Gimelshein 2018, https://arxiv.org/abs/1805.02867): keep the running max m, the
// running sum l of e^(s - m) and the running weighted sum of V rows; when a chunk raises the max,
// rescale l and the sum by e^(m_old - m_new). Memory per thread is one chunk of K/V rows and
// scores plus one output row per head, whatever the context length.
//
// This file holds the driver and the portable attend; ISA versions live in attention_*.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_ops.h"
#include "backend/ref/ref_ops.h"
#include "core/fp16.h"

namespace glia::cpu {
namespace {

constexpr size_t round8(size_t n) { return (n + 7) / 8 * 8; }

float kv_element(const attend_job& j, const void* base, int64_t index) {
  return j.f16 ? fp16_to_f32(static_cast<const uint16_t*>(base)[index]) : static_cast<const float*>(base)[index];
}

}  // namespace

// Plain loops over the layout of cpu_kernels.h (only the scores, acc, m and l parts are used).
void scalar_attend(const attend_job& j, float* scratch) {
  const size_t pk = round8(size_t(j.dk)), pv = round8(size_t(j.dv)), c = attend_chunk;
  float* scores = scratch + size_t(j.n_q) * pk + c * pk + c * pv;  // [n_q][chunk]
  float* acc = scores + size_t(j.n_q) * c;                          // [n_q][pv]
  float* m = acc + size_t(j.n_q) * pv;
  float* l = m + round8(size_t(j.n_q));
  for (int h = 0; h < j.n_q; ++h) {
    std::fill(acc + h * pv, acc + h * pv + j.dv, 0.0f);
    m[h] = -INFINITY;
    l[h] = 0.0f;
  }
  for (int64_t c0 = 0; c0 < j.n_slots; c0 += attend_chunk) {
    const int cnt = int(std::min<int64_t>(attend_chunk, j.n_slots - c0));
    for (int h = 0; h < j.n_q; ++h) {
      const float* qh = j.q + size_t(h) * size_t(j.dk);
      float* sh = scores + size_t(h) * c;
      float chunk_max = -INFINITY;
      for (int i = 0; i < cnt; ++i) {
        const int64_t row = int64_t(j.slots[c0 + i]) * j.k_stride;
        float dot = 0.0f;
        for (int d = 0; d < j.dk; ++d) dot += qh[d] * kv_element(j, j.k, row + d);
        float s = dot * j.scale;
        if (j.softcap > 0.0f) s = j.softcap * std::tanh(s / j.softcap);
        sh[i] = s;
        chunk_max = std::max(chunk_max, s);
      }
      float* ah = acc + size_t(h) * pv;
      if (chunk_max > m[h]) {
        const float corr = std::exp(m[h] - chunk_max);  // 0 while nothing was accumulated
        for (int d = 0; d < j.dv; ++d) ah[d] *= corr;
        l[h] *= corr;
        m[h] = chunk_max;
      }
      for (int i = 0; i < cnt; ++i) {
        const float e = std::exp(sh[i] - m[h]);
        l[h] += e;
        const int64_t row = int64_t(j.slots[c0 + i]) * j.v_stride;
        for (int d = 0; d < j.dv; ++d) ah[d] += e * kv_element(j, j.v, row + d);
      }
    }
  }
  for (int h = 0; h < j.n_q; ++h) {
    float* oh = j.out + size_t(h) * size_t(j.dv);
    if (l[h] > 0.0f) {
      const float inv = 1.0f / l[h];
      for (int d = 0; d < j.dv; ++d) oh[d] = acc[h * pv + d] * inv;
    } else {
      std::fill(oh, oh + j.dv, 0.0f);  // no visible key (cannot happen once the token itself is stored)
    }
  }
}

void attention(thread_pool& pool, const kernel_table& k, const kv_layer_view& kv, const float* q,
               const int32_t* positions, int64_t n_tok, const attention_params& p, float* out,
               std::vector<aligned_buffer>& scratch) {
  if (n_tok <= 0 || p.n_head <= 0) return;
  const int group = p.n_head / kv.n_kv_head;
  const int dk = kv.head_dim_k, dv = kv.head_dim_v;
  const size_t elem = kv.type == dtype::f16 ? 2 : 4;
  const size_t floats = attend_scratch_floats(group, dk, dv);
  const size_t bytes = floats * sizeof(float) + size_t(kv.n_slots) * sizeof(int32_t);
  const int64_t n_items = n_tok * kv.n_kv_head;
  auto item = [&](int64_t i, int ith) {
    const int64_t t = i / kv.n_kv_head;
    const int kvh = int(i % kv.n_kv_head);
    uint8_t* buf = scratch[size_t(ith)].get(bytes);
    auto* slots = reinterpret_cast<int32_t*>(buf + floats * sizeof(float));
    int64_t n = 0;
    for (int64_t s = 0; s < kv.n_slots; ++s)
      if (ref::slot_visible(kv.slot_pos[s], positions[t], p.window)) slots[n++] = int32_t(s);
    attend_job j;
    const int64_t head0 = t * p.n_head + int64_t(kvh) * group;
    j.q = q + head0 * dk;
    j.out = out + head0 * dv;
    j.n_q = group;
    j.dk = dk;
    j.dv = dv;
    j.f16 = kv.type == dtype::f16;
    j.k = static_cast<const uint8_t*>(kv.k) + size_t(kvh) * size_t(dk) * elem;
    j.v = static_cast<const uint8_t*>(kv.v) + size_t(kvh) * size_t(dv) * elem;
    j.k_stride = int64_t(kv.n_kv_head) * dk;
    j.v_stride = int64_t(kv.n_kv_head) * dv;
    j.slots = slots;
    j.n_slots = n;
    j.scale = p.scale;
    j.softcap = p.softcap;
    k.attend(j, reinterpret_cast<float*>(buf));
  };
  const int nth = pool.size();
  if (scratch.size() < size_t(nth)) scratch.resize(size_t(nth));
  const double work = double(n_items) * double(kv.n_slots) * double(group) * double(dk + dv);
  if (nth == 1 || n_items == 1 || work < double(1 << 15)) {
    for (int64_t i = 0; i < n_items; ++i) item(i, 0);
    return;
  }
  // Later tokens of a causal batch see more slots; the counter evens that out.
  for_each_item(pool, n_items, item);
}

}  // namespace glia::cpu
