// Matrix times activations for the CPU backend.
//
// Phase 1 converts every activation row once to the weight type's dot_type (split over threads by
// whole blocks, which are independent, so the bytes equal a one-row conversion), plus the block
// sums some kernels want. Phase 2 depends on what the kernel table has for the weight type:
//
//  - mm kernels (quantized types with ISA twins) on weights prepared at load: the gemm kernel over
//    blocks of the prepared 8-row panels, for any number of tokens. Decode gives each thread one
//    contiguous share of the blocks to stream in order (for_each_item_in_streams); one token reads
//    it as two streams, a block of each half of the matrix side by side (gemv_streams, see
//    in_two_streams); prefill hands blocks out through an atomic counter and reuses each from
//    cache for every token tile.
//    Matrices that share their input (matmul_shared: q, k, v; gate, up) convert it once and put
//    all their blocks in one work list.
//  - mm kernels on unprepared weights: few tokens (decode) run gemv over row chunks, each chunk read
//    in place once and reused from cache for every token; many tokens (prefill) pack row blocks of
//    8-row panels into per-thread scratch and run the gemm kernel over token tiles, so a weight block
//    is unpacked once per matmul and then multiplied with many tokens from registers.
//  - otherwise, tiles of (token block x row block), each element one vec_dot over the full row.
//
// matmul_glu runs a prompt's gate and up projections as one work list of row blocks of both, and
// applies the GLU to each token tile of a block's outputs while they are in cache.
//
// In every case an output element gets the arithmetic of the type's vec_dot (the mm kernels are its
// bit-exact twins), so the bits never depend on n_tok, the path, the tiling or the thread count
// (batch invariance). Tiles only decide what stays in cache.
#include <algorithm>
#include <atomic>
#include <span>

#include "backend/cpu/cpu_ops.h"
#include "quant/activation.h"

namespace glia::cpu {

uint8_t* aligned_buffer::get(size_t bytes) {
  if (bytes > capacity_) {
    raw_.reset(new uint8_t[bytes + 63]);
    capacity_ = bytes;
    const auto addr = reinterpret_cast<uintptr_t>(raw_.get());
    aligned_ = raw_.get() + ((64 - addr % 64) % 64);
  }
  return aligned_;
}

namespace {

constexpr size_t weight_tile_bytes = 16 << 10;       // generic path: fits L1 next to one activation row
constexpr size_t activation_tile_bytes = 256 << 10;  // stays in L2 across row blocks
constexpr int64_t gemm_min_tokens = gemv_max_tokens + 1;  // below: gemv straight from the weights
// Weight bytes per gemv work item: the kernels prefetch the next row groups of their item only,
// so short items start cold too often (32 KiB items: Q8_0 decode ~20% slower).
constexpr size_t gemv_chunk_bytes = 128 << 10;
constexpr size_t stream_block_bytes = 32 << 10;     // decode on prepared panels
constexpr size_t packed_block_target = 192 << 10;    // packed row block, kept in L2
constexpr size_t gemm_token_tile_bytes = 96 << 10;   // activation rows reused across a row block

// Converts x [n_tok, n_in] to rows of `at` in s.act with the quantizer the reference backend uses
// (ref::convert_activation_row), or its bit-exact ISA twin; matmul_test checks that the two
// backends agree bit for bit. With `mk`, also fills the block sums it needs. The blocks are split
// over the threads (they are independent, so the bytes equal a one-row conversion).
act_rows convert_activations(thread_pool& pool, const kernel_table& k, const type_traits& at, const float* x,
                             int64_t n_tok, int64_t n_in, const mm_kernel* mk, matmul_scratch& s) {
  const quantize_row_fn quantize = k.quantizer(quant::activation_quantizer(at.type));
  const int64_t nb = n_in / at.block_elems;  // blocks per row
  const size_t stride = row_bytes(at, n_in);
  const bool sums = mk && mk->needs_block_sums;
  const bool wide = mk && mk->widen;
  // F32 rows are x itself: widened from x, not copied first.
  const bool as_is = at.type == dtype::f32;
  if (!as_is) s.act.resize(size_t(n_tok) * stride);
  if (sums) {
    s.act_d.resize(size_t(n_tok * nb));
    s.act_sum.resize(size_t(n_tok * nb));
  }
  const int64_t wt = wide ? wide_tokens(*mk, n_tok) : 0;
  if (wide) s.act_wide.resize(wide_floats(n_tok, n_in, wt));
  const uint8_t* rows = as_is ? reinterpret_cast<const uint8_t*>(x) : s.act.data();
  float* act_d = s.act_d.data();
  int32_t* act_sum = s.act_sum.data();
  float* act_wide = s.act_wide.data();
  parallel_for(pool, n_tok * nb, at.block_elems, [&](int64_t begin, int64_t end) {
    // [begin, end) counts blocks over all rows; convert the part of each row inside it.
    for (int64_t b = begin; b < end;) {
      const int64_t t = b / nb;
      const int64_t first = b % nb;
      const int64_t count = std::min(nb - first, end - b);
      const size_t at_block = size_t(t) * stride + size_t(first) * at.block_bytes;
      const uint8_t* dst = rows + at_block;
      if (!as_is) quantize(x + t * n_in + first * at.block_elems, s.act.data() + at_block, count * at.block_elems);
      if (sums) mk->block_sums(dst, count, act_d + t * nb + first, act_sum + t * nb + first);
      if (wide) mk->widen(dst, count * at.block_elems, act_wide + wide_offset(t, n_in, wt) + first * at.block_elems * wt, wt);
      b += count;
    }
  });
  return act_rows{rows, stride, act_d, act_sum, nb, wide ? act_wide : nullptr, wt};
}

void matmul_gemv(thread_pool& pool, const mm_kernel& mk, const weight_view& w, const act_rows& a, int64_t n_tok,
                 float* y) {
  const int nth = pool.size();
  int64_t rows = int64_t(gemv_chunk_bytes / std::max<size_t>(w.row_stride, 1));
  // Enough chunks for the counter to even out the threads' finishing times.
  rows = std::min(rows, w.n_out / (8 * int64_t(nth)));
  rows = std::max<int64_t>(8, rows / 8 * 8);
  const int64_t n_chunks = (w.n_out + rows - 1) / rows;
  for_each_item(pool, n_chunks, [&](int64_t i, int) {
    const int64_t r0 = i * rows, r1 = std::min(w.n_out, r0 + rows);
    mk.gemv(w, r0, r1, a, 0, n_tok, y + r0, size_t(w.n_out));
  });
}

// Rows of w in its 8-row panel p (8 but in the last panel).
int panel_rows(const weight_view& w, int64_t p) { return int(std::min<int64_t>(8, w.n_out - 8 * p)); }

// One matrix of a gemm call: its 8-row panels (prepared at load, or packed here per block) cut into
// blocks, the work items.
struct panel_job {
  const mm_kernel* mk;
  const weight_view* w;
  const uint8_t* prepared;  // null: pack each block into per-thread scratch
  float* y;
  size_t panel_bytes;
  int64_t n_panels, per_block, n_blocks;
};

// n_sharing: prefill blocks of this many matrices take turns in L2 (matmul_glu), each gets that share.
panel_job plan_panels(const mm_kernel& mk, const weight_view& w, int64_t nb, int64_t n_tok, int nth,
                      const uint8_t* prepared, float* y, int n_sharing = 1) {
  panel_job j{&mk, &w, prepared, y, size_t(nb) * mk.packed_block_bytes, (w.n_out + 7) / 8, 1, 0};
  // Decode on prepared panels: each thread streams its share in order (for_each_item_in_streams), so
  // blocks only set how finely the threads' finishing times even out. Packed per call, a block is
  // a new stream and must be long enough to start warm (see gemv_chunk_bytes). Prefill keeps a
  // block in L2 while the token tiles pass over it.
  const size_t block_target = n_tok >= gemm_min_tokens ? packed_block_target / size_t(n_sharing)
                              : prepared                ? stream_block_bytes
                                                        : gemv_chunk_bytes;
  int64_t per_block = std::max<int64_t>(1, int64_t(block_target / j.panel_bytes));
  per_block = std::clamp<int64_t>(per_block, 1, std::max<int64_t>(1, j.n_panels / (2 * int64_t(nth))));
  if (per_block > 1) per_block &= ~int64_t(1);  // whole pairs of panels (kernels may read two at a time)
  j.per_block = per_block;
  j.n_blocks = (j.n_panels + per_block - 1) / per_block;
  return j;
}

// Block i of job j: its panels [p0, p1) and where they are (packed into thread ith's scratch when
// the matrix was not prepared).
struct panel_block {
  const uint8_t* panels;
  int64_t p0, p1;
};
panel_block block_panels(const panel_job& j, int64_t i, int ith, std::vector<aligned_buffer>& pack) {
  const weight_view& w = *j.w;
  const int64_t p0 = i * j.per_block, p1 = std::min(j.n_panels, p0 + j.per_block);
  if (j.prepared) return {j.prepared + size_t(p0) * j.panel_bytes, p0, p1};
  uint8_t* dst = pack[size_t(ith)].get(size_t(p1 - p0) * j.panel_bytes);
  for (int64_t p = p0; p < p1; ++p) j.mk->pack(w, 8 * p, panel_rows(w, p), dst + size_t(p - p0) * j.panel_bytes);
  return {dst, p0, p1};
}

// Tokens [t0, t0 + nt) times the panels of block b.
void gemm_block(const panel_job& j, const panel_block& b, const act_rows& a, int64_t t0, int64_t nt) {
  const weight_view& w = *j.w;
  j.mk->gemm(b.panels, j.panel_bytes, b.p1 - b.p0, a.nb, a, t0, nt, j.y + t0 * w.n_out + 8 * b.p0, size_t(w.n_out),
             panel_rows(w, b.p1 - 1));
}

// Block i of job j times every token, in token tiles of tok_tile.
void run_panel_block(const panel_job& j, int64_t i, int ith, const act_rows& a, int64_t n_tok, int64_t tok_tile,
                     std::vector<aligned_buffer>& pack) {
  const panel_block b = block_panels(j, i, ith, pack);
  for (int64_t t0 = 0; t0 < n_tok; t0 += tok_tile) gemm_block(j, b, a, t0, std::min(tok_tile, n_tok - t0));
}

// Tokens per tile of a gemm over jobs: whole blocks of widened activations (act_rows::wide), which
// the kernels' tiles must not straddle, and whole groups of the kernels' tile_tokens; all tokens at
// once where every kernel tiles them itself.
int64_t gemm_token_tile(std::span<const panel_job> jobs, const act_rows& a, int64_t n_tok) {
  int64_t unit = 4;
  bool all_tiled = true;  // every kernel takes tokens in tiles of its own (mm_kernel::tile_tokens)
  for (const panel_job& j : jobs) {
    unit = std::max<int64_t>({unit, j.mk->wide_block, j.mk->tile_tokens});
    all_tiled = all_tiled && j.mk->tile_tokens > 0;
  }
  return all_tiled ? n_tok
                   : std::min(n_tok, std::max<int64_t>(unit, int64_t(gemm_token_tile_bytes / a.stride) / unit * unit));
}

// Decode of one token in two streams (mm_kernel::gemv_streams), when every job is prepared and its
// kernel has them: item i of a job pairs its block i with its block i + n_blocks / 2 (an odd last
// block is an item of its own, after the pairs). for_each_item_in_streams gives each thread a
// contiguous share of the items, so each thread reads two long sequential streams, one in each
// half of the matrix (the pairs' second panels follow each other as the first ones do).
bool in_two_streams(std::span<const panel_job> jobs, int64_t n_tok) {
  if (n_tok != 1) return false;
  for (const panel_job& j : jobs)
    if (!j.prepared || !j.mk->gemv_streams) return false;
  return true;
}
// Work items of job j: its blocks, or in two streams its pairs of blocks and an odd last one.
int64_t job_items(const panel_job& j, bool two_streams) {
  return two_streams ? j.n_blocks - j.n_blocks / 2 : j.n_blocks;
}

// Item i of job j in two streams (see in_two_streams), for one token.
void run_stream_item(const panel_job& j, int64_t i, const act_rows& a, std::vector<aligned_buffer>& pack) {
  const int64_t half = j.n_blocks / 2;
  if (i >= half) {
    run_panel_block(j, 2 * half, 0, a, 1, 1, pack);
    return;
  }
  const weight_view& w = *j.w;
  // Block i is whole (only the last block can be short); its partner may be the last one.
  const int64_t p = i * j.per_block, q = (i + half) * j.per_block;
  const int64_t q_panels = std::min(j.per_block, j.n_panels - q);
  const bool short_tail = q + q_panels == j.n_panels && panel_rows(w, j.n_panels - 1) < 8;
  const int64_t n_pairs = std::min(j.per_block, q_panels - (short_tail ? 1 : 0));
  const auto at = [&](int64_t panel) { return j.prepared + size_t(panel) * j.panel_bytes; };
  j.mk->gemv_streams(at(p), size_t(q - p) * j.panel_bytes, j.panel_bytes, n_pairs, a.nb, a, 0, j.y + 8 * p,
                     j.y + 8 * q);
  // What has no partner: the first block's panels beyond a short second block, and a short last panel.
  if (j.per_block > n_pairs)
    j.mk->gemm(at(p + n_pairs), j.panel_bytes, j.per_block - n_pairs, a.nb, a, 0, 1, j.y + 8 * (p + n_pairs),
               size_t(w.n_out), 8);
  if (q_panels > n_pairs)
    j.mk->gemm(at(q + n_pairs), j.panel_bytes, q_panels - n_pairs, a.nb, a, 0, 1, j.y + 8 * (q + n_pairs),
               size_t(w.n_out), panel_rows(w, q + q_panels - 1));
}

// The blocks of every job (matrices that share the activations a) times token tiles, as one work
// list for the pool: one wake-up and one join for all of them.
void matmul_gemm(thread_pool& pool, std::span<const panel_job> jobs, const act_rows& a, int64_t n_tok,
                 std::vector<aligned_buffer>& pack) {
  const int nth = pool.size();
  const int64_t tok_tile = gemm_token_tile(jobs, a, n_tok);
  const bool two = in_two_streams(jobs, n_tok);
  bool all_prepared = true;
  int64_t n_items = 0;
  for (const panel_job& j : jobs) {
    all_prepared = all_prepared && j.prepared;
    n_items += job_items(j, two);
  }
  if (!all_prepared && pack.size() < size_t(nth)) pack.resize(size_t(nth));
  auto item = [&](int64_t i, int ith) {
    size_t k = 0;
    while (i >= job_items(jobs[k], two)) i -= job_items(jobs[k++], two);
    if (two)
      run_stream_item(jobs[k], i, a, pack);
    else
      run_panel_block(jobs[k], i, ith, a, n_tok, tok_tile, pack);
  };
  if (all_prepared && n_tok < gemm_min_tokens)
    for_each_item_in_streams(pool, n_items, item);
  else
    for_each_item(pool, n_items, item);
}

// Tiles of vec_dot calls, for types without mm kernels.
void matmul_generic(thread_pool& pool, const kernel_table& k, const weight_view& w, const uint8_t* a,
                    size_t act_stride, int64_t n_tok, float* y) {
  const vec_dot_fn dot = k.vec_dot(w.type);
  const int nth = pool.size();
  int64_t rows_per_tile = std::max<int64_t>(1, int64_t(weight_tile_bytes / std::max<size_t>(w.row_stride, 1)));
  rows_per_tile = std::clamp<int64_t>(rows_per_tile, 1, std::max<int64_t>(1, w.n_out / (4 * int64_t(nth))));
  const int64_t toks_per_tile =
      std::clamp<int64_t>(int64_t(activation_tile_bytes / std::max<size_t>(act_stride, 1)), 1, n_tok);
  const int64_t n_row_tiles = (w.n_out + rows_per_tile - 1) / rows_per_tile;
  const int64_t n_tok_tiles = (n_tok + toks_per_tile - 1) / toks_per_tile;
  const int64_t n_tiles = n_row_tiles * n_tok_tiles;

  auto do_tile = [&](int64_t tile, int) {
    // Token-block major: threads sweep the weights together over one block of activations.
    const int64_t t0 = (tile / n_row_tiles) * toks_per_tile;
    const int64_t r0 = (tile % n_row_tiles) * rows_per_tile;
    const int64_t t1 = std::min(n_tok, t0 + toks_per_tile);
    const int64_t r1 = std::min(w.n_out, r0 + rows_per_tile);
    for (int64_t t = t0; t < t1; ++t) {
      const uint8_t* at_row = a + size_t(t) * act_stride;
      float* yt = y + t * w.n_out;
      for (int64_t r = r0; r < r1; ++r) yt[r] = dot(w.row(r), at_row, w.n_in);
    }
  };
  const double macs = double(n_tok) * double(w.n_out) * double(w.n_in);
  if (nth == 1 || n_tiles == 1 || macs < double(1 << 16)) {
    for (int64_t i = 0; i < n_tiles; ++i) do_tile(i, 0);
    return;
  }
  for_each_item(pool, n_tiles, do_tile);
}

// Whether matmul_shared runs ws as one work list: every matrix prepared (at most
// max_shared_matrices), with kernels that read the same activations.
bool one_work_list(const kernel_table& k, std::span<const weight_view> ws,
                   std::span<const prepared_weight* const> prepared) {
  const mm_kernel* first = ws.empty() ? nullptr : k.mm(ws[0].type);
  if (!first || ws.size() > max_shared_matrices) return false;
  for (size_t i = 0; i < ws.size(); ++i) {
    const mm_kernel* mk = k.mm(ws[i].type);
    if (!prepared[i] || !mk || ws[i].n_in != ws[0].n_in || mk->dot_type != first->dot_type ||
        mk->block_sums != first->block_sums)
      return false;
  }
  return true;
}

}  // namespace

bool prepare_weight(thread_pool& pool, const kernel_table& k, const weight_view& w, prepared_weight& out,
                    huge_page_arena& arena) {
  const mm_kernel* mk = k.mm(w.type);
  if (!mk || !mk->compact_panels() || w.n_out <= 0 || w.n_in % mk->block_elems != 0) return false;
  const int64_t n_panels = (w.n_out + 7) / 8;
  const size_t panel_bytes = size_t(w.n_in / mk->block_elems) * mk->packed_block_bytes;
  out.source = w;
  out.bytes = size_t(n_panels) * panel_bytes;
  uint8_t* dst = arena.take(out.bytes);
  if (!dst) return false;
  out.panels = dst;
  parallel_for(pool, n_panels, w.n_in * 8, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      mk->pack(w, 8 * p, panel_rows(w, p), dst + size_t(p) * panel_bytes);
  });
  return true;
}

void matmul(thread_pool& pool, const kernel_table& k, const weight_view& w, const float* x, int64_t n_tok,
            float* y, matmul_scratch& s, const prepared_weight* prepared) {
  if (n_tok <= 0 || w.n_out <= 0) return;
  const type_traits& wt = type_info(w.type);
  const type_traits& at = type_info(wt.dot_type);
  const mm_kernel* mk = k.mm(w.type);
  const size_t act_stride = row_bytes(at, w.n_in);
  const int64_t nb = w.n_in / at.block_elems;

  act_rows rows{reinterpret_cast<const uint8_t*>(x), act_stride, nullptr, nullptr, nb};
  if (wt.dot_type != dtype::f32 || (mk && mk->widen)) rows = convert_activations(pool, k, at, x, n_tok, w.n_in, mk, s);
  if (!mk) {
    matmul_generic(pool, k, w, rows.data, act_stride, n_tok, y);
    return;
  }
  if (!prepared && n_tok < gemm_min_tokens) {
    matmul_gemv(pool, *mk, w, rows, n_tok, y);
    return;
  }
  const panel_job job = plan_panels(*mk, w, nb, n_tok, pool.size(), prepared ? prepared->panels : nullptr, y);
  matmul_gemm(pool, std::span<const panel_job>(&job, 1), rows, n_tok, s.pack);
}

void matmul_shared(thread_pool& pool, const kernel_table& k, std::span<const weight_view> ws, const float* x,
                   int64_t n_tok, std::span<float* const> ys, matmul_scratch& s,
                   std::span<const prepared_weight* const> prepared) {
  if (n_tok <= 0 || ws.empty()) return;
  if (!one_work_list(k, ws, prepared)) {
    for (size_t i = 0; i < ws.size(); ++i) matmul(pool, k, ws[i], x, n_tok, ys[i], s, prepared[i]);
    return;
  }
  const mm_kernel* first = k.mm(ws[0].type);
  const act_rows rows = convert_activations(pool, k, type_info(first->dot_type), x, n_tok, ws[0].n_in, first, s);
  panel_job jobs[max_shared_matrices];
  for (size_t i = 0; i < ws.size(); ++i)
    jobs[i] = plan_panels(*k.mm(ws[i].type), ws[i], rows.nb, n_tok, pool.size(), prepared[i]->panels, ys[i]);
  matmul_gemm(pool, std::span<const panel_job>(jobs, ws.size()), rows, n_tok, s.pack);
}

bool matmul_glu(thread_pool& pool, const kernel_table& k, const weight_view& gate, const weight_view& up,
                const float* x, int64_t n_tok, activation act, float* out, float* up_out, matmul_scratch& s,
                const prepared_weight* prepared_gate, const prepared_weight* prepared_up) {
  const weight_view ws[] = {gate, up};
  const prepared_weight* const prepared[] = {prepared_gate, prepared_up};
  // one_work_list: prepared panels only (so that no block is packed into scratch the other
  // matrix's block shares).
  if (n_tok < gemm_min_tokens || gate.n_out != up.n_out || !one_work_list(k, ws, prepared)) return false;
  const mm_kernel &mg = *k.mm(gate.type), &mu = *k.mm(up.type);
  // Kernels that take all of a call's tokens at once (tile_tokens: AMX, which stages the panels per
  // call) leave a block's outputs for every token, more than L2 holds in a long prompt: the GLU
  // then read them back strided, and took 1.5x its unfused time (perf, 1724 tokens).
  if (mg.tile_tokens > 0 || mu.tile_tokens > 0) return false;
  const int64_t nb = gate.n_in / type_info(mg.dot_type).block_elems;
  // Token tiles alternate between a gate block and an up block, which share L2 at half size each.
  const panel_job jobs[] = {plan_panels(mg, gate, nb, n_tok, pool.size(), prepared_gate->panels, out, 2),
                            plan_panels(mu, up, nb, n_tok, pool.size(), prepared_up->panels, up_out, 2)};
  if (jobs[0].per_block != jobs[1].per_block) return false;  // blocks of different rows
  const act_rows a = convert_activations(pool, k, type_info(mg.dot_type), x, n_tok, gate.n_in, &mg, s);
  const int64_t tok_tile = gemm_token_tile(jobs, a, n_tok);
  const int64_t n_out = gate.n_out;
  // Item i: the same rows of both matrices, a token tile at a time, and their GLU while the tile's
  // outputs are still in cache (unfused, the gate and up outputs make a round trip through memory:
  // at 512 tokens and 5632 rows, 23 MB written and read back per layer).
  for_each_item(pool, jobs[0].n_blocks, [&](int64_t i, int ith) {
    const panel_block bg = block_panels(jobs[0], i, ith, s.pack), bu = block_panels(jobs[1], i, ith, s.pack);
    const int64_t r0 = 8 * bg.p0, n_rows = std::min(n_out, 8 * bg.p1) - r0;
    for (int64_t t0 = 0; t0 < n_tok; t0 += tok_tile) {
      const int64_t nt = std::min(tok_tile, n_tok - t0);
      gemm_block(jobs[0], bg, a, t0, nt);
      gemm_block(jobs[1], bu, a, t0, nt);
      for (int64_t t = t0; t < t0 + nt; ++t) {
        float* g = out + t * n_out + r0;
        k.glu(g, up_out + t * n_out + r0, g, n_rows, act);
      }
    }
  });
  return true;
}

size_t decode_share_head(const kernel_table& k, std::span<const weight_view> ws,
                         std::span<const prepared_weight* const> prepared, int nth, int ith, size_t budget,
                         std::span<std::span<const uint8_t>> out) {
  // Only what one matmul (or matmul_shared) call streams as one work list has thread shares to warm.
  if (!one_work_list(k, ws, prepared)) return 0;
  // The work list of a one-token matmul_gemm over these matrices (same plan, same thread shares).
  panel_job jobs[max_shared_matrices];
  for (size_t i = 0; i < ws.size(); ++i) {
    const mm_kernel* mk = k.mm(ws[i].type);
    jobs[i] = plan_panels(*mk, ws[i], ws[i].n_in / mk->block_elems, 1, nth, prepared[i]->panels, nullptr);
  }
  const std::span<const panel_job> list(jobs, ws.size());
  const bool two = in_two_streams(list, 1);
  int64_t n_items = 0;
  for (const panel_job& j : list) n_items += job_items(j, two);
  const auto [begin, end] = split_range(n_items, ith, nth);
  // The thread's one stream, or its two (each with half the budget), job after job.
  size_t left[2] = {two ? budget / 2 : budget, two ? budget - budget / 2 : 0};
  size_t n_spans = 0;
  const auto add = [&](const panel_job& j, int s, int64_t b0, int64_t b1) {  // blocks [b0, b1) of j
    if (b0 >= b1 || left[s] == 0 || n_spans == out.size()) return;
    const size_t from = size_t(b0 * j.per_block) * j.panel_bytes;
    const size_t to = size_t(std::min(j.n_panels, b1 * j.per_block)) * j.panel_bytes;
    const size_t bytes = std::min(left[s], to - from);
    out[n_spans++] = std::span<const uint8_t>(j.prepared + from, bytes);
    left[s] -= bytes;
  };
  int64_t first = 0;  // item index of the job's item 0
  for (const panel_job& j : list) {
    const int64_t i0 = std::max(begin, first) - first, i1 = std::min(end, first + job_items(j, two)) - first;
    first += job_items(j, two);
    if (i0 >= i1) continue;
    if (!two) {
      add(j, 0, i0, i1);
      continue;
    }
    // Items below half pair block i with block i + half; the one above is the odd last block.
    const int64_t half = j.n_blocks / 2;
    add(j, 0, i0, std::min(i1, half));
    add(j, 1, i0 + half, std::min(i1, half) + half);
    if (i1 > half) add(j, 0, 2 * half, j.n_blocks);
  }
  return n_spans;
}

void warm_decode_shares(thread_pool& pool, const kernel_table& k, std::span<const weight_view> ws,
                        std::span<const prepared_weight* const> prepared, size_t budget) {
  for (int ith = 1; ith < pool.size(); ++ith) {
    std::span<const uint8_t> spans[thread_pool::max_warm_spans];
    const size_t n = decode_share_head(k, ws, prepared, pool.size(), ith, budget, spans);
    pool.warm(ith, std::span<const std::span<const uint8_t>>(spans, n));
  }
}

}  // namespace glia::cpu
