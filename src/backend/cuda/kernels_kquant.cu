// Q2_K..Q6_K and IQ4_XS matrices in the file's block layout against Q8_K activations quantized
// on the device as the reference quantizes them: each block is cut into parts (kquant_dot.h) taken
// by consecutive lanes, whose integer sums are added across those lanes (exact) and folded into a
// float as the reference's vec_dot folds a block (IQ4_XS: each part on its own, as the reference
// folds each sub-block), so every block's value is the reference's bit for bit. The row's sum of
// those values is not: each lane adds its blocks and the warp then adds the lanes as a tree, where
// the reference chains them left to right (equal to rounding). A token's result is formed the same
// way whatever the number of tokens or rows a launch covers, so batches are invariant.

#include <stdexcept>
#include <string>

#include "backend/cuda/kernels.h"
#include "backend/cuda/kquant_dot.h"
#include "quant/types.h"

namespace glia::cuda {
namespace {

constexpr int warps_per_block = 8;
constexpr int max_tile = 4;       // tokens per pass over a weight row
constexpr int rows_per_warp = 2;  // one token: weight rows per warp (matrices with >= few_rows rows)
constexpr int64_t few_rows = 8192;
constexpr unsigned full_mask = 0xffffffffu;

// A warp per block of 256 activations, 8 consecutive values per lane: the same operations as
// quantize_row_q8_k. The peak is the first element of largest magnitude (the reference keeps the
// first strictly larger one), found as the largest (magnitude, -index) across the warp.
__global__ void quantize_q8_k_kernel(const float* x, int64_t n_blocks, int8_t* xq, float* xd, int16_t* xbs) {
  const int64_t b = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (b >= n_blocks) return;
  const float* xb = x + b * 256 + 8 * lane;
  float v[8];
  float amax = 0.0f, peak = 0.0f;
  int idx = 256;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    v[i] = xb[i];
    const float a = detail::abs(v[i]);
    if (a > amax) {
      amax = a;
      peak = v[i];
      idx = 8 * lane + i;
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    const float oa = __shfl_xor_sync(full_mask, amax, off), op = __shfl_xor_sync(full_mask, peak, off);
    const int oi = __shfl_xor_sync(full_mask, idx, off);
    if (oa > amax || (oa == amax && oi < idx)) {
      amax = oa;
      peak = op;
      idx = oi;
    }
  }
  uint32_t packed[2] = {0, 0};
  int sum = 0;
  float d = 0.0f;
  if (amax != 0.0f) {
    const float iscale = detail::div(-127.0f, peak);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      // nearest_int of a NaN: the reference's x86 product keeps an input NaN's payload (and a NaN
      // it makes itself, inf * 0, is the default one, giving 0); the device's is canonical.
      const float p = detail::mul(iscale, v[i]);
      const int q = p == p ? detail::nearest_int(p) : v[i] != v[i] ? int(detail::f2u(v[i]) & 0x3FFFFFu) : 0;
      const int8_t c = int8_t(q < 127 ? q : 127);
      sum += c;
      packed[i / 4] |= uint32_t(uint8_t(c)) << (8 * (i % 4));
    }
    d = detail::div(1.0f, iscale);
  }
  *reinterpret_cast<uint2*>(xq + b * 256 + 8 * lane) = make_uint2(packed[0], packed[1]);
  const int pair = sum + __shfl_xor_sync(full_mask, sum, 1);  // a sum of 16 spans two lanes
  if (lane % 2 == 0) xbs[b * 16 + lane / 2] = int16_t(pair);
  if (lane == 0) xd[b] = d;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(full_mask, v, off);
  return v;
}

// A block of T: its bytes and how many lanes share it (each taking 256 / parts elements).
template <dtype T>
struct kq_layout {
  static constexpr int parts = T == dtype::q4_k || T == dtype::q5_k ? q4_k_parts : T == dtype::q6_k ? q6_k_parts
                               : T == dtype::iq4_xs                  ? iq4_xs_parts
                                                                     : low_k_parts;
  static constexpr int part_elems = 256 / parts;
  static constexpr size_t block_bytes = sizeof(std::conditional_t<T == dtype::iq4_xs, quant::block_iq4_xs, k_block<T>>);
};

// y [n_tok, n_out]: warp w of block (bx, by) computes rows (bx * 8 + w) * R ... for tokens by * TILE
// ... (R > 1 only for one token). Lane l takes part l % parts of the blocks it visits; every lane
// runs every round (a block's lanes all hold it or none do), so the shuffles see the whole warp.
template <dtype T, int R, int TILE>
__global__ void __launch_bounds__(32 * warps_per_block) mm_kquant(const uint8_t* w, size_t stride, int64_t nb,
                                                                   int64_t n_out, const int8_t* xq, const float* xd,
                                                                   const int16_t* xbs, int64_t n_tok, float* y) {
  using L = kq_layout<T>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o0 = (int64_t(blockIdx.x) * warps_per_block + warp) * R;
  if (o0 >= n_out) return;
  const int64_t t0 = int64_t(blockIdx.y) * TILE;
  const int nt = int(min(int64_t(TILE), n_tok - t0));
  const uint8_t* row[R];
#pragma unroll
  for (int r = 0; r < R; ++r) row[r] = w + size_t(min(o0 + r, n_out - 1)) * stride;  // past the end: not written
  float acc[R][TILE];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < TILE; ++j) acc[r][j] = 0.0f;
  const int part = lane % L::parts;
  const int64_t items = nb * L::parts;
  for (int64_t base = 0; base < items; base += 32) {
    const bool valid = base + lane < items;
    const int64_t b = valid ? (base + lane) / L::parts : 0;
#pragma unroll
    for (int j = 0; j < TILE; ++j) {
      if (j >= nt) break;
      const int64_t ab = (t0 + j) * nb + b;
      const int8_t* aq = xq + ab * 256 + L::part_elems * part;
      const int16_t* bs = xbs + ab * 16;
      const float da = xd[ab];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const uint8_t* blk = row[r] + size_t(b) * L::block_bytes;
        if constexpr (T == dtype::iq4_xs) {
          // The reference folds each sub-block on its own: nothing to add across lanes first.
          if (valid) acc[r][j] = detail::add(acc[r][j], iq4_xs_sub_block(blk, part, aq, da));
        } else {
          kq_part p;
          if constexpr (T == dtype::q6_k) p = q6_k_eighth(blk, part, aq, bs);
          else if constexpr (T == dtype::q2_k || T == dtype::q3_k) p = low_k_eighth<T == dtype::q3_k>(blk, part, aq, bs);
          else p = k_quarter<T == dtype::q5_k>(blk, part, aq, bs);
#pragma unroll
          for (int off = 1; off < L::parts; off <<= 1) {
            p.isum += __shfl_xor_sync(full_mask, p.isum, off);
            if constexpr (k_has_min<T>) p.min_term += __shfl_xor_sync(full_mask, p.min_term, off);
          }
          if (valid && part == 0) acc[r][j] = detail::add(acc[r][j], k_block_value<T>(blk, da, p.isum, p.min_term));
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < TILE; ++j) {
      const float v = warp_sum(acc[r][j]);
      if (lane == 0 && j < nt && o0 + r < n_out) y[(t0 + j) * n_out + o0 + r] = v;
    }
}

template <dtype T>
void launch(cudaStream_t s, const weight_view& w, const int8_t* xq, const float* xd, const int16_t* xbs, int64_t n_tok,
            float* y) {
  const auto* data = static_cast<const uint8_t*>(w.data);
  const int64_t nb = w.n_in / 256;
  constexpr int threads = 32 * warps_per_block;
  const auto blocks = [&](int rows) { return unsigned((w.n_out + int64_t(rows) - 1) / rows); };
  if (n_tok == 1) {
    // Several rows per warp share activation loads, but a small matrix needs every warp it can get.
    if (w.n_out >= few_rows)
      mm_kquant<T, rows_per_warp, 1><<<dim3(blocks(warps_per_block * rows_per_warp)), threads, 0, s>>>(
          data, w.row_stride, nb, w.n_out, xq, xd, xbs, n_tok, y);
    else
      mm_kquant<T, 1, 1><<<dim3(blocks(warps_per_block)), threads, 0, s>>>(data, w.row_stride, nb, w.n_out, xq, xd, xbs,
                                                                           n_tok, y);
    return;
  }
  const dim3 grid(blocks(warps_per_block), unsigned((n_tok + max_tile - 1) / max_tile));
  mm_kquant<T, 1, max_tile><<<grid, threads, 0, s>>>(data, w.row_stride, nb, w.n_out, xq, xd, xbs, n_tok, y);
}

}  // namespace

void quantize_q8_k_activations(cudaStream_t s, const float* x, int64_t n, int8_t* xq, float* xd, int16_t* xbs) {
  const int64_t n_blocks = n / 256;
  if (n_blocks == 0) return;
  quantize_q8_k_kernel<<<unsigned((n_blocks + warps_per_block - 1) / warps_per_block), 32 * warps_per_block, 0, s>>>(
      x, n_blocks, xq, xd, xbs);
  check_launch("quantize_q8_k_activations");
}

bool kquant_type(dtype t) {
  return t == dtype::q2_k || t == dtype::q3_k || t == dtype::q4_k || t == dtype::q5_k || t == dtype::q6_k ||
         t == dtype::iq4_xs;
}

bool kquant_supported(const weight_view& w) {
  if (w.n_in <= 0 || w.n_out <= 0 || w.n_in % 256 != 0 || !kquant_type(w.type)) return false;
  // Q4_K and Q5_K rows are read 16 bytes at a time, IQ4_XS blocks (136 bytes) 8, Q6_K (210), Q3_K
  // (110) and Q2_K (84) 2.
  const size_t align = w.type == dtype::q4_k || w.type == dtype::q5_k ? 16 : w.type == dtype::iq4_xs ? 8 : 2;
  return uintptr_t(w.data) % align == 0 && w.row_stride % align == 0 &&
         w.row_stride >= size_t(w.n_in / 256) * type_info(w.type).block_bytes;
}

void matmul_kquant(cudaStream_t s, const weight_view& w, const int8_t* xq, const float* xd, const int16_t* xbs,
                   int64_t n_tok, float* y) {
  if (n_tok == 0 || w.n_out == 0) return;
  switch (w.type) {
    case dtype::q2_k: launch<dtype::q2_k>(s, w, xq, xd, xbs, n_tok, y); break;
    case dtype::q3_k: launch<dtype::q3_k>(s, w, xq, xd, xbs, n_tok, y); break;
    case dtype::q4_k: launch<dtype::q4_k>(s, w, xq, xd, xbs, n_tok, y); break;
    case dtype::q5_k: launch<dtype::q5_k>(s, w, xq, xd, xbs, n_tok, y); break;
    case dtype::q6_k: launch<dtype::q6_k>(s, w, xq, xd, xbs, n_tok, y); break;
    case dtype::iq4_xs: launch<dtype::iq4_xs>(s, w, xq, xd, xbs, n_tok, y); break;
    default: throw std::runtime_error(std::string("matmul_kquant: no kernel for type ") + type_info(w.type).name);
  }
  check_launch("matmul_kquant");
}

}  // namespace glia::cuda
