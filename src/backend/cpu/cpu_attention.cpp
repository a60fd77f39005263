// Attention over the KV cache for the CPU backend. Work items are (tile of tokens, KV head) pairs:
// the query heads of a GQA group, and the tokens of a prefill tile, read the same K and V rows, so
// an item converts each row once for all of them. Within an item, attend streams over the slots in
// chunks of 64 (by slot index; a bit mask per token says which it sees) with an online softmax
// (Milakov & Gimelshein 2018, https://arxiv.org/abs/1805.02867): keep the running max m, the
// running sum l of e^(s - m) and the running weighted sum of V rows; when a chunk raises the max,
// rescale l and the sum by e^(m_old - m_new). Memory per thread is one chunk of K/V rows and
// scores plus one output row per query row, whatever the context length.
//
// This file holds the driver and the portable attend; ISA versions live in attention_*.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_ops.h"

namespace glia::cpu {
namespace {

constexpr size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
constexpr int max_lanes = 16;  // the widest attend kernel's vector (AVX-512)


// Offsets (in floats) of the attend scratch parts, in this order: kc, vc, scores, acc, m, l.
// pk and pv are dk and dv rounded up to `lanes`; every part is a multiple of 8 floats.
struct attend_layout {
  size_t pk, pv, rows8, kc, vc, scores, acc, m, l, total;
  attend_layout(int n_rows, int dk, int dv, int lanes)
      : pk(round_up(size_t(dk), size_t(lanes))), pv(round_up(size_t(dv), size_t(lanes))), rows8(round_up(size_t(n_rows), 8)) {
    const size_t c = attend_chunk;
    kc = 0;
    vc = kc + c * pk;
    scores = vc + c * pv;
    acc = scores + rows8 * c;
    m = acc + rows8 * pv;
    l = m + rows8;
    total = l + rows8;
  }
};

}  // namespace

size_t attend_scratch_floats(int n_rows, int dk, int dv) { return attend_layout(n_rows, dk, dv, max_lanes).total; }

attend_parts attend_begin(const attend_job& j, float* scratch, int lanes) {
  const int rows = j.n_tok * j.n_q;
  const attend_layout at(rows, j.dk, j.dv, lanes);
  attend_parts s;
  s.pk = at.pk;
  s.pv = at.pv;
  s.kc = scratch + at.kc;
  s.vc = scratch + at.vc;
  s.scores = scratch + at.scores;
  s.acc = scratch + at.acc;
  s.m = scratch + at.m;
  s.l = scratch + at.l;
  std::fill(s.acc, s.acc + size_t(rows) * s.pv, 0.0f);
  std::fill(s.m, s.m + rows, -INFINITY);
  std::fill(s.l, s.l + rows, 0.0f);
  return s;
}

// Plain loops over the layout of attend_begin (the kc and vc parts are not used).
void scalar_attend(const attend_job& j, float* scratch) {
  const attend_parts sp = attend_begin(j, scratch);
  const size_t pv = sp.pv, c = attend_chunk;
  float* scores = sp.scores;
  float* acc = sp.acc;
  float* m = sp.m;
  float* l = sp.l;
  for (int64_t w = 0; w < j.vis_words; ++w) {
    const int64_t s0 = w * int64_t(c);
    const int cnt = int(std::min<int64_t>(int64_t(c), j.n_slots - s0));
    for (int t = 0; t < j.n_tok; ++t) {
      const uint64_t bits = j.vis_bits(t, w);
      if (!bits) continue;
      for (int h = 0; h < j.n_q; ++h) {
        const size_t r = size_t(t * j.n_q + h);
        const float* qh = j.q + t * j.q_stride + int64_t(h) * j.dk;
        float* sh = scores + r * c;
        float chunk_max = -INFINITY;
        for (int i = 0; i < cnt; ++i) {
          if (!(bits >> i & 1)) continue;
          float dot = 0.0f;
          for (int d = 0; d < j.dk; ++d) dot += qh[d] * kv_element(j, j.k, key_index(j, s0 + i, d));
          float s = dot * j.scale;
          if (j.softcap > 0.0f) s = j.softcap * std::tanh(s / j.softcap);
          sh[i] = s;
          chunk_max = std::max(chunk_max, s);
        }
        float* ah = acc + r * pv;
        if (chunk_max > m[r]) {
          const float corr = std::exp(m[r] - chunk_max);  // 0 while nothing was accumulated
          for (int d = 0; d < j.dv; ++d) ah[d] *= corr;
          l[r] *= corr;
          m[r] = chunk_max;
        }
        for (int i = 0; i < cnt; ++i) {
          if (!(bits >> i & 1)) continue;
          const float e = std::exp(sh[i] - m[r]);
          l[r] += e;
          const int64_t row = (s0 + i) * j.v_stride;
          for (int d = 0; d < j.dv; ++d) ah[d] += e * kv_element(j, j.v, row + d);
        }
      }
    }
  }
  attend_output(j, sp);
}

void attend_output(const attend_job& j, const attend_parts& s) {
  for (int t = 0; t < j.n_tok; ++t) {
    for (int h = 0; h < j.n_q; ++h) {
      const size_t r = size_t(t * j.n_q + h);
      const float* acc = s.acc + r * s.pv;
      if (j.partial) {
        float* ph = j.partial + r * size_t(j.dv + 2);
        ph[0] = s.m[r];
        ph[1] = s.l[r];
        std::copy(acc, acc + j.dv, ph + 2);
        continue;
      }
      float* oh = j.out + t * j.out_stride + int64_t(h) * j.dv;
      // l is 0 only when no key was visible (cannot happen once the token itself is stored); a NaN
      // score makes it NaN, and the NaN must come out so that the non-finite check reports it.
      if (s.l[r] != 0.0f) {
        const float inv = 1.0f / s.l[r];
        for (int d = 0; d < j.dv; ++d) oh[d] = acc[d] * inv;
      } else {
        std::fill(oh, oh + j.dv, 0.0f);
      }
    }
  }
}

namespace {

// out = the softmax-weighted sum of one query row over the segments' parts (m, l, acc each, `stride`
// floats apart), in segment order: sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M), M the largest
// m of the parts that saw a slot. A single such part gives exactly acc / l (e^0 = 1), the bits of
// an unsplit job.
void merge_parts(const float* part, size_t stride, int64_t n_parts, int dv, float* out) {
  float big = -INFINITY;
  bool seen = false, nan = false;  // a part with l = 0 saw no slot; l = NaN came from a NaN score
  for (int64_t s = 0; s < n_parts; ++s) {
    const float l = part[size_t(s) * stride + 1];
    if (l == 0.0f) continue;
    seen = true;
    nan = nan || std::isnan(l);
    big = std::max(big, part[size_t(s) * stride]);
  }
  std::fill(out, out + dv, nan ? NAN : 0.0f);
  if (!seen || nan) return;  // no visible key, or a NaN to pass on to the non-finite check
  float l = 0.0f;
  for (int64_t s = 0; s < n_parts; ++s) {
    const float* ps = part + size_t(s) * stride;
    if (ps[1] == 0.0f) continue;
    const float c = std::exp(ps[0] - big);
    l += ps[1] * c;
    for (int d = 0; d < dv; ++d) out[d] += ps[2 + d] * c;
  }
  const float inv = 1.0f / l;
  for (int d = 0; d < dv; ++d) out[d] *= inv;
}

}  // namespace

void attention(thread_pool& pool, const kernel_table& k, const kv_layer_view& kv, const float* q,
               const int32_t* positions, int64_t n_tok, const attention_params& p, float* out,
               attention_scratch& scratch) {
  if (n_tok <= 0 || p.n_head <= 0) return;
  const int group = p.n_head / kv.n_kv_head;
  const int dk = kv.head_dim_k, dv = kv.head_dim_v;
  const size_t elem = kv.type == dtype::f16 ? 2 : 4;
  const int nth = pool.size();
  // Which slots each token sees, one bit per slot: computed once for all KV heads.
  // Slots from n_live on hold no key: skipping them changes no bit (their parts would be empty).
  const int64_t n_slots = std::clamp<int64_t>(kv.n_live, 0, kv.n_slots);
  const int64_t vis_words = (n_slots + attend_chunk - 1) / attend_chunk;
  if (vis_words == 0) {  // no key at all: what attend_output gives a row that sees none
    std::fill(out, out + n_tok * p.n_head * dv, 0.0f);
    return;
  }
  scratch.vis.resize(size_t(n_tok * vis_words));
  uint64_t* vis = scratch.vis.data();
  parallel_for(pool, n_tok, n_slots, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int64_t w = 0; w < vis_words; ++w) {
        const int64_t s0 = w * attend_chunk, cnt = std::min<int64_t>(attend_chunk, n_slots - s0);
        vis[t * vis_words + w] = visible_bits(kv.slot_pos + s0, int(cnt), positions[t], p.window);
      }
  });
  // A job is a tile of consecutive tokens for one KV head (about 32 query rows share each chunk of
  // K and V rows) and one segment of the cache: long contexts are cut into segments of
  // attend_segment_slots by slot index, attended separately and merged (merge_parts), so that a
  // decode step with few KV heads still gives every thread work. The cut depends only on slot
  // indices, never on the batch or the thread count: results stay batch invariant.
  const int tile_tok = int(std::clamp<int64_t>(32 / std::max(group, 1), 1, 16));
  const int64_t n_tiles = (n_tok + tile_tok - 1) / tile_tok;
  const int64_t seg_words = attend_segment_slots / attend_chunk;
  const int64_t n_segs = (vis_words + seg_words - 1) / seg_words;
  const size_t floats = attend_scratch_floats(tile_tok * group, dk, dv);
  const int64_t n_items = n_tiles * kv.n_kv_head * n_segs;
  const size_t part_stride = size_t(dv + 2), tile_parts = size_t(tile_tok * group) * part_stride;
  if (n_segs > 1) scratch.partials.resize(size_t(n_items) * tile_parts);
  if (scratch.per_thread.size() < size_t(nth)) scratch.per_thread.resize(size_t(nth));
  // Item i: segment i % n_segs of (tile, KV head) i / n_segs, parts at partials + i * tile_parts.
  auto item = [&](int64_t i, int ith) {
    const int64_t seg = i % n_segs, pair = i / n_segs;
    // Last tiles first: in a causal batch they see the most slots, and the short ones fill the tail.
    const int64_t tile = n_tiles - 1 - pair / kv.n_kv_head;
    const int kvh = int(pair % kv.n_kv_head);
    const int64_t t0 = tile * tile_tok, s0 = seg * attend_segment_slots;
    attend_job j;
    j.n_tok = int(std::min<int64_t>(tile_tok, n_tok - t0));
    j.q = q + (t0 * p.n_head + int64_t(kvh) * group) * dk;
    j.q_stride = int64_t(p.n_head) * dk;
    j.out = out + (t0 * p.n_head + int64_t(kvh) * group) * dv;
    j.out_stride = int64_t(p.n_head) * dv;
    if (n_segs > 1) j.partial = scratch.partials.data() + size_t(i) * tile_parts;
    j.n_q = group;
    j.dk = dk;
    j.dv = dv;
    j.f16 = kv.type == dtype::f16;
    j.k_chunks = !kv.rows(kv_part::k);
    j.k_stride = j.k_chunks ? 0 : kv.slot_stride(dk);
    j.v_stride = kv.slot_stride(dv);
    j.k = static_cast<const uint8_t*>(kv.k) + size_t(kv.offset(kv_part::k, s0, kvh, 0)) * elem;  // s0: a whole chunk
    j.v = static_cast<const uint8_t*>(kv.v) + size_t(kv.offset(kv_part::v, s0, kvh, 0)) * elem;
    j.n_slots = std::min<int64_t>(attend_segment_slots, n_slots - s0);
    j.vis = vis + t0 * vis_words + seg * seg_words;
    j.vis_words = std::min(seg_words, vis_words - seg * seg_words);
    j.vis_stride = vis_words;
    j.scale = p.scale;
    j.softcap = p.softcap;
    k.attend(j, reinterpret_cast<float*>(scratch.per_thread[size_t(ith)].get(floats * sizeof(float))));
  };
  const double work = double(n_tok) * double(n_slots) * double(p.n_head) * double(dk + dv);
  const bool serial = nth == 1 || work < double(1 << 15);  // too little to share out
  if (serial || n_items == 1) {
    for (int64_t i = 0; i < n_items; ++i) item(i, 0);
  } else {
    for_each_item(pool, n_items, item);
  }
  if (n_segs == 1) return;
  auto merge = [&](int64_t t) {
    const int64_t tile = t / tile_tok, tt = t % tile_tok;
    for (int kvh = 0; kvh < kv.n_kv_head; ++kvh) {
      const int64_t first = ((n_tiles - 1 - tile) * kv.n_kv_head + kvh) * n_segs;  // the pair's first item
      for (int h = 0; h < group; ++h) {
        const size_t r = size_t(tt * group + h);
        merge_parts(scratch.partials.data() + size_t(first) * tile_parts + r * part_stride, tile_parts, n_segs, dv,
                    out + (t * p.n_head + int64_t(kvh) * group + h) * dv);
      }
    }
  };
  if (serial) {
    for (int64_t t = 0; t < n_tok; ++t) merge(t);
  } else {
    parallel_for(pool, n_tok, int64_t(p.n_head) * dv * n_segs, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) merge(t);
    });
  }
}

}  // namespace glia::cpu
