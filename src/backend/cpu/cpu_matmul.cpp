// Matrix times activations for the CPU backend.
//
// Two phases: (1) every activation row is converted once to the weight type's dot_type (split over
// threads by whole blocks, which are independent, so the bytes equal a one-row conversion); (2) the
// output is cut into tiles of (token block x row block) handed out through an atomic counter, and
// each element of a tile is one vec_dot over the full row. The reduction order of an element is
// therefore fixed by the kernel alone: the same bits whatever n_tok, the tiling or the thread count
// (batch invariance). Tiles only decide what stays in cache: a row block of weights (about 16 KiB)
// is reused by every token of the block, and a token block of activations by every row block.
#include <algorithm>
#include <atomic>

#include "backend/cpu/cpu_ops.h"

namespace glia::cpu {
namespace {

constexpr size_t weight_tile_bytes = 16 << 10;      // fits L1 next to one activation row
constexpr size_t activation_tile_bytes = 256 << 10;  // stays in L2 across row blocks

// Converts x [n_tok, n_in] to rows of `at` (stride act_stride) in `out` with the quantizer the
// reference backend uses (ref::convert_activation_row), or its bit-exact ISA twin; matmul_test
// checks that the two backends agree bit for bit.
void convert_activations(thread_pool& pool, const kernel_table& k, const type_traits& at, const float* x,
                         int64_t n_tok, int64_t n_in, uint8_t* out, size_t act_stride) {
  const quantize_row_fn quantize = k.quantizer(at.quantize_row);
  const int64_t nb = n_in / at.block_elems;  // blocks per row
  parallel_for(pool, n_tok * nb, at.block_elems, [&](int64_t begin, int64_t end) {
    // [begin, end) counts blocks over all rows; convert the part of each row inside it.
    for (int64_t b = begin; b < end;) {
      const int64_t t = b / nb;
      const int64_t first = b % nb;
      const int64_t count = std::min(nb - first, end - b);
      quantize(x + t * n_in + first * at.block_elems, out + size_t(t) * act_stride + size_t(first) * at.block_bytes,
                      count * at.block_elems);
      b += count;
    }
  });
}

}  // namespace

void matmul(thread_pool& pool, const kernel_table& k, const weight_view& w, const float* x, int64_t n_tok,
            float* y, std::vector<uint8_t>& act) {
  if (n_tok <= 0 || w.n_out <= 0) return;
  const type_traits& wt = type_info(w.type);
  const type_traits& at = type_info(wt.dot_type);
  const vec_dot_fn dot = k.vec_dot(w.type);
  const size_t act_stride = row_bytes(at, w.n_in);

  const uint8_t* a = reinterpret_cast<const uint8_t*>(x);
  if (wt.dot_type != dtype::f32) {
    act.resize(size_t(n_tok) * act_stride);
    convert_activations(pool, k, at, x, n_tok, w.n_in, act.data(), act_stride);
    a = act.data();
  }

  const int nth = pool.size();
  int64_t rows_per_tile = std::max<int64_t>(1, int64_t(weight_tile_bytes / std::max<size_t>(w.row_stride, 1)));
  // Enough tiles for the atomic counter to balance the threads.
  rows_per_tile = std::clamp<int64_t>(rows_per_tile, 1, std::max<int64_t>(1, w.n_out / (4 * int64_t(nth))));
  const int64_t toks_per_tile =
      std::clamp<int64_t>(int64_t(activation_tile_bytes / std::max<size_t>(act_stride, 1)), 1, n_tok);
  const int64_t n_row_tiles = (w.n_out + rows_per_tile - 1) / rows_per_tile;
  const int64_t n_tok_tiles = (n_tok + toks_per_tile - 1) / toks_per_tile;
  const int64_t n_tiles = n_row_tiles * n_tok_tiles;

  auto do_tile = [&](int64_t tile) {
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
    for (int64_t i = 0; i < n_tiles; ++i) do_tile(i);
    return;
  }
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n_tiles;
         i = next.fetch_add(1, std::memory_order_relaxed))
      do_tile(i);
  });
}

}  // namespace glia::cpu
