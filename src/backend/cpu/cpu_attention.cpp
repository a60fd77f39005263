// Attention over the KV cache for the CPU backend: one (token, head) pair at a time per thread,
// streaming over the slots in chunks with an online softmax (Milakov & Gimelshein 2018,
// https://arxiv.org/abs/1805.02867): keep the running max m, the running sum l of e^(s - m) and the
// running weighted sum of V rows; when a chunk raises the max, rescale l and the sum by e^(m_old -
// m_new). Memory per thread is one chunk of scores plus one output row, whatever the context length.
// A pair's result depends only on its query and the cache, never on the other tokens of the batch.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/ref/ref_ops.h"

namespace glia::cpu {
namespace {

constexpr int slot_chunk = 64;

struct head_job {
  const kernel_table& k;
  const kv_layer_view& kv;
  const attention_params& p;
};

// out [head_dim_v] for one query head `qh` at position `pos` reading kv head `kvh`.
void attend_one(const head_job& job, const float* qh, int32_t pos, int kvh, float* out, std::vector<float>& acc) {
  const kv_layer_view& kv = job.kv;
  const kernel_table& k = job.k;
  const int dk = kv.head_dim_k, dv = kv.head_dim_v;
  const bool f16 = kv.type == dtype::f16;
  const int64_t k_stride = int64_t(kv.n_kv_head) * dk;  // elements between slots
  const int64_t v_stride = int64_t(kv.n_kv_head) * dv;
  const int64_t k_off = int64_t(kvh) * dk, v_off = int64_t(kvh) * dv;

  acc.assign(size_t(dv), 0.0f);
  float m = -INFINITY, l = 0.0f;
  float score[slot_chunk];
  int64_t slot[slot_chunk];
  for (int64_t s0 = 0; s0 < kv.n_slots; s0 += slot_chunk) {
    const int64_t s1 = std::min(kv.n_slots, s0 + slot_chunk);
    int cnt = 0;
    float chunk_max = -INFINITY;
    for (int64_t s = s0; s < s1; ++s) {
      if (!ref::slot_visible(kv.slot_pos[s], pos, job.p.window)) continue;
      const int64_t off = s * k_stride + k_off;
      const float d = f16 ? k.dot_f32_f16(qh, static_cast<const uint16_t*>(kv.k) + off, dk)
                          : k.dot_f32(qh, static_cast<const float*>(kv.k) + off, dk);
      float sc = d * job.p.scale;
      if (job.p.softcap > 0.0f) sc = job.p.softcap * std::tanh(sc / job.p.softcap);
      score[cnt] = sc;
      slot[cnt] = s;
      chunk_max = std::max(chunk_max, sc);
      ++cnt;
    }
    if (cnt == 0) continue;
    if (chunk_max > m) {
      if (l > 0.0f) {
        const float corr = std::exp(m - chunk_max);
        k.scale_f32(acc.data(), corr, dv);
        l *= corr;
      }
      m = chunk_max;
    }
    for (int j = 0; j < cnt; ++j) {
      const float e = std::exp(score[j] - m);
      if (e == 0.0f) continue;
      l += e;
      const int64_t off = slot[j] * v_stride + v_off;
      if (f16)
        k.axpy_f16(e, static_cast<const uint16_t*>(kv.v) + off, acc.data(), dv);
      else
        k.axpy_f32(e, static_cast<const float*>(kv.v) + off, acc.data(), dv);
    }
  }
  if (l > 0.0f) {
    const float inv = 1.0f / l;
    for (int d = 0; d < dv; ++d) out[d] = acc[size_t(d)] * inv;
  } else {
    std::fill(out, out + dv, 0.0f);  // no visible key (cannot happen once the token itself is stored)
  }
}

}  // namespace

void attention(thread_pool& pool, const kernel_table& k, const kv_layer_view& kv, const float* q,
               const int32_t* positions, int64_t n_tok, const attention_params& p, float* out) {
  if (n_tok <= 0 || p.n_head <= 0) return;
  const int group = p.n_head / kv.n_kv_head;
  const int64_t n_pairs = n_tok * p.n_head;
  const head_job job{k, kv, p};
  auto do_pair = [&](int64_t i, std::vector<float>& acc) {
    const int64_t t = i / p.n_head;
    const int h = int(i % p.n_head);
    attend_one(job, q + (t * p.n_head + h) * kv.head_dim_k, positions[t], h / group,
               out + (t * p.n_head + h) * kv.head_dim_v, acc);
  };
  const double work = double(n_pairs) * double(kv.n_slots) * double(kv.head_dim_k + kv.head_dim_v);
  if (pool.size() == 1 || n_pairs == 1 || work < double(1 << 15)) {
    std::vector<float> acc;
    for (int64_t i = 0; i < n_pairs; ++i) do_pair(i, acc);
    return;
  }
  // Later tokens of a causal batch see more slots, so pairs are handed out one at a time.
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    std::vector<float> acc;
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_pairs;
         i = next.fetch_add(1, std::memory_order_relaxed))
      do_pair(i, acc);
  });
}

}  // namespace glia::cpu
