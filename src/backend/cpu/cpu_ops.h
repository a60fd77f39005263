// The heavy ops of the CPU backend as free functions over a thread pool and a kernel table, so the
// backend class stays a thin dispatcher and tests can run them with any kernel table.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "core/huge_page_buffer.h"
#include "core/thread_pool.h"

namespace glia::cpu {

// Runs f(begin, end) over [0, n) split evenly into one part per pool thread, or on the calling
// thread alone when the whole job (n * cost_per_item, in rough element-operations) is too small to
// pay for a wake-up. Threads take parts as they come (run_dynamic): a worker that is not running
// leaves its part to the others instead of holding the job up.
template <typename F>
void parallel_for(thread_pool& pool, int64_t n, int64_t cost_per_item, F&& f) {
  constexpr int64_t min_parallel_cost = 1 << 15;
  if (n <= 0) return;
  if (pool.size() == 1 || n == 1 || n * cost_per_item < min_parallel_cost) {
    f(int64_t(0), n);
    return;
  }
  std::atomic<int> next{0};
  pool.run_dynamic([&](int, int nth) {
    for (int part = next.fetch_add(1, std::memory_order_relaxed); part < nth;
         part = next.fetch_add(1, std::memory_order_relaxed)) {
      const auto [begin, end] = split_range(n, part, nth);
      if (begin < end) f(begin, end);
    }
  });
}

// Runs job(item, ith) for item in [0, n_items) on the pool's threads (ith: the thread's
// index), items handed out one at a time through an atomic counter so that uneven items balance.
template <typename F>
void for_each_item(thread_pool& pool, int64_t n_items, F&& job) {
  if (pool.size() == 1 || n_items == 1) {
    for (int64_t i = 0; i < n_items; ++i) job(i, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  pool.run_dynamic([&](int ith, int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_items;
         i = next.fetch_add(1, std::memory_order_relaxed))
      job(i, ith);
  });
}

// Runs job(item, ith) for item in [0, n_items) on the pool's threads, each thread walking its own
// contiguous share of the items in order and then helping with what is left of the others' shares
// (from their current front). Made for streaming reads (decode matmuls): each thread's weights are
// one sequential stream that the hardware prefetcher follows across item boundaries, where items
// dealt out one at a time would make every item a new stream; the helping still evens out the
// finishing times.
template <typename F>
void for_each_item_in_streams(thread_pool& pool, int64_t n_items, F&& job) {
  constexpr int max_streams = 64;
  const int nth = pool.size();
  if (nth == 1 || n_items == 1 || nth > max_streams) {
    for_each_item(pool, n_items, job);
    return;
  }
  struct alignas(64) cursor {
    std::atomic<int64_t> next;
    int64_t end;
  };
  cursor cursors[max_streams];
  for (int i = 0; i < nth; ++i) {
    const auto [begin, end] = split_range(n_items, i, nth);
    cursors[i].next.store(begin, std::memory_order_relaxed);
    cursors[i].end = end;
  }
  pool.run_dynamic([&](int ith, int) {
    for (int k = 0; k < nth; ++k) {
      cursor& c = cursors[(ith + k) % nth];
      for (int64_t i = c.next.fetch_add(1, std::memory_order_relaxed); i < c.end;
           i = c.next.fetch_add(1, std::memory_order_relaxed))
        job(i, ith);
    }
  });
}

// Grow-only byte buffer aligned for vector loads (kernels' scratch: no allocation once warm).
class aligned_buffer {
 public:
  uint8_t* get(size_t bytes);  // at least `bytes`, 64-byte aligned; contents unspecified
  const uint8_t* data() const { return aligned_; }

 private:
  std::unique_ptr<uint8_t[]> raw_;
  size_t capacity_ = 0;
  uint8_t* aligned_ = nullptr;
};

// Reusable buffers of matmul, kept by the backend between calls.
struct matmul_scratch {
  std::vector<uint8_t> act;          // [n_tok, row bytes] activations converted to the dot_type
  std::vector<float> act_d;          // [n_tok, blocks] block scales (kernels with block sums)
  std::vector<int32_t> act_sum;      // [n_tok, blocks] block quant sums
  std::vector<float> act_wide;       // [n_tok, elements] activations as floats (kernels with widen)
  std::vector<aligned_buffer> pack;  // one per thread: packed weight panels
};

// A weight matrix repacked into the 8-row panels of its type's mm kernel (backend::prepare_weight).
struct prepared_weight {
  weight_view source;  // the matrix it was made from
  const uint8_t* panels = nullptr;  // ceil(n_out / 8) panels of nb * packed_block_bytes, in an arena
  size_t bytes = 0;
};

// Repacks w for k's mm kernel of its type into memory taken from `arena` (which must outlive out);
// false (nothing done) when the type has no compact panels or the memory is refused.
bool prepare_weight(thread_pool& pool, const kernel_table& k, const weight_view& w, prepared_weight& out,
                    huge_page_arena& arena);

// y [n_tok, w.n_out] = x [n_tok, w.n_in] . w^T (backend::matmul), reading `prepared` panels of w
// when given. Every element is computed with the arithmetic of one kernel vec_dot over the full row
// (the batched mm kernels reproduce it bit for bit), so row t of y does not depend on n_tok, the
// tiling, the thread count or whether w was prepared.
void matmul(thread_pool& pool, const kernel_table& k, const weight_view& w, const float* x, int64_t n_tok,
            float* y, matmul_scratch& scratch, const prepared_weight* prepared = nullptr);

// ys[i] = x . ws[i]^T for matrices that share their input (q, k, v; gate, up): the activations are
// converted once and the blocks of all the matrices form one work list, so the pool wakes once and
// each thread streams one contiguous share of them. Same bits as a matmul per matrix; falls back to
// that when a matrix is not prepared or the kernels read different activations. At most
// max_shared_matrices matrices.
inline constexpr size_t max_shared_matrices = 8;
void matmul_shared(thread_pool& pool, const kernel_table& k, std::span<const weight_view> ws, const float* x,
                   int64_t n_tok, std::span<float* const> ys, matmul_scratch& scratch,
                   std::span<const prepared_weight* const> prepared);

// out [n_tok, gate.n_out] = act(x . gate^T) * (x . up^T) for a prompt's tokens on prepared panels
// of kernels that read the same activations: each work item multiplies the same rows of both
// matrices by a token tile and applies k.glu to that tile of outputs while it is in cache (up_out
// [n_tok, up.n_out] holds the up projection's tiles). The same bits as matmul_shared then glu.
// Returns false, having done nothing, where that does not apply (fewer than gemv_max_tokens + 1
// tokens, a matrix not prepared, matrices of different shapes, kernels that differ in activations
// or in rows per work block, kernels that take all tokens at once: mm_kernel::tile_tokens).
bool matmul_glu(thread_pool& pool, const kernel_table& k, const weight_view& gate, const weight_view& up,
                const float* x, int64_t n_tok, activation act, float* out, float* up_out, matmul_scratch& scratch,
                const prepared_weight* prepared_gate, const prepared_weight* prepared_up);

// The first `budget` bytes of the prepared panels that thread ith of nth streams when ws are
// multiplied by one token (matmul or matmul_shared: the share for_each_item_in_streams gives it), as
// at most out.size() spans written to out, in the order the thread reaches them; returns how many.
// Where the kernels read two streams (mm_kernel::gemv_streams), the first budget / 2 bytes of each.
// 0 when ws would not run as one work list (a matrix not prepared, or kernels that read different
// activations).
size_t decode_share_head(const kernel_table& k, std::span<const weight_view> ws,
                         std::span<const prepared_weight* const> prepared, int nth, int ith, size_t budget,
                         std::span<std::span<const uint8_t>> out);

// backend::prefetch_weights for a decode step: each worker of the pool warms (thread_pool::warm)
// the decode_share_head of its own share.
void warm_decode_shares(thread_pool& pool, const kernel_table& k, std::span<const weight_view> ws,
                        std::span<const prepared_weight* const> prepared, size_t budget);

// Reusable buffers of attention, kept by the backend between calls.
struct attention_scratch {
  std::vector<aligned_buffer> per_thread;  // one attend scratch per thread
  std::vector<uint64_t> vis;               // [n_tok][words] slot visibility bits
  std::vector<float> partials;             // per item of a segmented context: m, l, acc per query row
};

// backend::attention: parallel over (tile of tokens, KV head, segment of the cache); each item runs
// the kernel table's attend for the query heads of that KV head and the tokens of the tile.
void attention(thread_pool& pool, const kernel_table& k, const kv_layer_view& kv, const float* q,
               const int32_t* positions, int64_t n_tok, const attention_params& p, float* out,
               attention_scratch& scratch);

// The CPU backend running on a given kernel table (tests use scalar_kernels() to check that the
// threading and tiling alone reproduce the reference bit for bit). `k` must outlive the backend.
std::unique_ptr<backend> make_cpu_backend(int n_threads, const kernel_table& k, bool repack_weights = true);

}  // namespace glia::cpu
