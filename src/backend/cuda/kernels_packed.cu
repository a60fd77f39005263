// Matrix kernels over weights the CUDA backend repacked at load (prepare_weight): the 32-element
// blocks of Q4_0 and Q8_0 split into a plane of quants (16-byte aligned rows, so each lane reads a
// whole block with one 16-byte load) and a plane of fp16 scales. Activations are quantized to Q8_0
// on the device exactly as the reference does, and blocks are dotted with dp4a: integer sums, as
// the reference computes them. F16/BF16 rows are naturally aligned and read 8 values per load.
#include "backend/cuda/block_decode.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/packed_weights.h"

namespace glia::cuda {
namespace {

constexpr int warps_per_block = 8;
constexpr int max_tile = 4;       // tokens per pass over a weight row
constexpr int rows_per_warp = 4;  // one token: weight rows per warp (of a matrix with >= few_rows rows)
constexpr int64_t few_rows = 8192;

// A warp per activation block, a lane per value: the same operations as quantize_q8_0 (so the
// same bits), with the block's peak and quant sum taken across the warp.
__global__ void quantize_q8_0_kernel(const float* x, int64_t n_blocks, int8_t* xq, float* xd, int* xsum) {
  const int64_t b = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (b >= n_blocks) return;
  const float v = x[b * 32 + lane];
  const float a = detail::abs(v);
  float amax = 0.0f < a ? a : 0.0f;  // as the serial max from 0: a NaN never becomes the peak
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, amax, off);
    amax = amax < o ? o : amax;
  }
  const float d = half_to_float(float_to_half(detail::div(amax, 127.0f)));
  const float id = amax != 0.0f ? detail::div(127.0f, amax) : 0.0f;
  const float r = detail::round_even(detail::mul(v, id));
  const int q = r >= -127.0f && r <= 127.0f ? int(r) : (r > 0.0f ? 127 : r < 0.0f ? -127 : 0);
  xq[b * 32 + lane] = int8_t(q);
  int sum = q;
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (lane == 0) {
    xd[b] = d;
    xsum[b] = sum;
  }
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// One block's integer dot product: Q4_0 nibbles (QB = 16, quants q - 8) or Q8_0 bytes (QB = 32)
// against 32 int8 activations whose sum is a_sum.
template <int QB>
__device__ __forceinline__ int block_dot(int4 w0, int4 w1, int4 a0, int4 a1, int a_sum) {
  if constexpr (QB == 16) {
    constexpr int mask = 0x0F0F0F0F;
    int s = __dp4a(w0.x & mask, a0.x, 0);
    s = __dp4a(w0.y & mask, a0.y, s);
    s = __dp4a(w0.z & mask, a0.z, s);
    s = __dp4a(w0.w & mask, a0.w, s);
    s = __dp4a((w0.x >> 4) & mask, a1.x, s);
    s = __dp4a((w0.y >> 4) & mask, a1.y, s);
    s = __dp4a((w0.z >> 4) & mask, a1.z, s);
    s = __dp4a((w0.w >> 4) & mask, a1.w, s);
    return s - 8 * a_sum;
  } else {
    int s = __dp4a(w0.x, a0.x, 0);
    s = __dp4a(w0.y, a0.y, s);
    s = __dp4a(w0.z, a0.z, s);
    s = __dp4a(w0.w, a0.w, s);
    s = __dp4a(w1.x, a1.x, s);
    s = __dp4a(w1.y, a1.y, s);
    s = __dp4a(w1.z, a1.z, s);
    return __dp4a(w1.w, a1.w, s);
  }
}

// Up to three matrices of one type and width that read the same activations (q, k, v; gate, up),
// run as one launch: block x of the grid belongs to the matrix whose range of blocks holds it.
struct packed_targets {
  int n = 0;
  const uint8_t* quants[3];
  const uint16_t* scales[3];
  int64_t n_out[3];
  float* y[3];
  unsigned first_block[4];
};

// The target that block x of the grid works on, and the block's first row in it. Picked with
// constant indices: a run-time index into the kernel parameters would copy them to local memory.
struct target_rows {
  const uint8_t* quants;
  const uint16_t* scales;
  int64_t n_out;
  float* y;
  int64_t first_row;
};

__device__ __forceinline__ target_rows target_of(const packed_targets& tg, int rows_per_block) {
  const int m = tg.n > 2 && blockIdx.x >= tg.first_block[2] ? 2 : tg.n > 1 && blockIdx.x >= tg.first_block[1] ? 1 : 0;
  const auto pick = [m](auto a, auto b, auto c) { return m == 0 ? a : m == 1 ? b : c; };
  return {pick(tg.quants[0], tg.quants[1], tg.quants[2]), pick(tg.scales[0], tg.scales[1], tg.scales[2]),
          pick(tg.n_out[0], tg.n_out[1], tg.n_out[2]), pick(tg.y[0], tg.y[1], tg.y[2]),
          int64_t(blockIdx.x - pick(tg.first_block[0], tg.first_block[1], tg.first_block[2])) * rows_per_block};
}

// Q4_0 (QB = 16 bytes of nibbles per block) or Q8_0 (QB = 32 bytes of int8) against Q8_0
// activations. Warp per output row, lane per block; TILE tokens share each weight load.
template <int QB, int TILE>
__global__ void __launch_bounds__(32 * warps_per_block) mm_q_planes(packed_targets tg, int64_t nb, const int8_t* xq,
                                                                     const float* xd, const int* xsum, int64_t n_tok) {
  const target_rows tr = target_of(tg, warps_per_block);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o = tr.first_row + warp;
  const int64_t n_out = tr.n_out;
  if (o >= n_out) return;
  const int64_t t0 = int64_t(blockIdx.y) * TILE;
  const int nt = int(min(int64_t(TILE), n_tok - t0));
  const uint8_t* qrow = tr.quants + size_t(o) * size_t(nb) * QB;
  const uint16_t* drow = tr.scales + size_t(o) * size_t(nb);
  float acc[TILE];
#pragma unroll
  for (int j = 0; j < TILE; ++j) acc[j] = 0.0f;
#pragma unroll 4
  for (int64_t b = lane; b < nb; b += 32) {
    const int4 w0 = *reinterpret_cast<const int4*>(qrow + b * QB);
    int4 w1 = w0;
    if constexpr (QB == 32) w1 = *reinterpret_cast<const int4*>(qrow + b * QB + 16);
    const float d = half_to_float(drow[b]);
#pragma unroll
    for (int j = 0; j < TILE; ++j) {
      if (j >= nt) break;
      const int64_t ab = (t0 + j) * nb + b;
      const int4 a0 = *reinterpret_cast<const int4*>(xq + ab * 32);
      const int4 a1 = *reinterpret_cast<const int4*>(xq + ab * 32 + 16);
      const int s = block_dot<QB>(w0, w1, a0, a1, xsum[ab]);
      acc[j] = fmaf(d * xd[ab], float(s), acc[j]);
    }
  }
  float* y = tr.y;
#pragma unroll
  for (int j = 0; j < TILE; ++j) {
    const float v = warp_sum(acc[j]);
    if (lane == 0 && j < nt) y[(t0 + j) * n_out + o] = v;
  }
}

// One token, R rows per warp: the activation block's loads are shared by R weight rows and each
// lane has R independent 16-byte weight loads in flight. Per row, the sum is formed exactly as in
// mm_q_planes (same order), so a token alone gives the bits it gets in a batch.
template <int QB, int R>
__global__ void __launch_bounds__(32 * warps_per_block) mm_q_planes_one(packed_targets tg, int64_t nb, const int8_t* xq,
                                                                         const float* xd, const int* xsum) {
  const target_rows tr = target_of(tg, warps_per_block * R);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o0 = tr.first_row + int64_t(warp) * R;
  const int64_t n_out = tr.n_out;
  if (o0 >= n_out) return;
  const uint8_t* q0 = tr.quants;
  const uint16_t* d0 = tr.scales;
  const uint8_t* qrow[R];
  const uint16_t* drow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t o = min(o0 + r, n_out - 1);  // rows past the end repeat the last (not written)
    qrow[r] = q0 + size_t(o) * size_t(nb) * QB;
    drow[r] = d0 + size_t(o) * size_t(nb);
  }
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
#pragma unroll 2
  for (int64_t b = lane; b < nb; b += 32) {
    int4 w0[R], w1[R];
    float d[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      w0[r] = *reinterpret_cast<const int4*>(qrow[r] + b * QB);
      w1[r] = w0[r];
      if constexpr (QB == 32) w1[r] = *reinterpret_cast<const int4*>(qrow[r] + b * QB + 16);
      d[r] = half_to_float(drow[r][b]);
    }
    const int4 a0 = *reinterpret_cast<const int4*>(xq + b * 32);
    const int4 a1 = *reinterpret_cast<const int4*>(xq + b * 32 + 16);
    const float ad = xd[b];
    const int as = xsum[b];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = fmaf(d[r] * ad, float(block_dot<QB>(w0[r], w1[r], a0, a1, as)), acc[r]);
  }
  float* y = tr.y;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float v = warp_sum(acc[r]);
    if (lane == 0 && o0 + r < n_out) y[o0 + r] = v;
  }
}

template <bool BF16>
__device__ __forceinline__ float2 two_halves(uint32_t u) {
  if constexpr (BF16) return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xFFFF0000u));
  return make_float2(half_to_float(uint16_t(u & 0xFFFF)), half_to_float(uint16_t(u >> 16)));
}

// acc + the 8 halves of p times a and b, in order (both F16/BF16 kernels form their sums with it).
template <bool BF16>
__device__ __forceinline__ float dot8(uint4 p, float4 a, float4 b, float acc) {
  const float2 w01 = two_halves<BF16>(p.x), w23 = two_halves<BF16>(p.y), w45 = two_halves<BF16>(p.z),
               w67 = two_halves<BF16>(p.w);
  acc = fmaf(w01.x, a.x, acc);
  acc = fmaf(w01.y, a.y, acc);
  acc = fmaf(w23.x, a.z, acc);
  acc = fmaf(w23.y, a.w, acc);
  acc = fmaf(w45.x, b.x, acc);
  acc = fmaf(w45.y, b.y, acc);
  acc = fmaf(w67.x, b.z, acc);
  return fmaf(w67.y, b.w, acc);
}

// F16/BF16 rows (n_in % 8 == 0) against activations already rounded to the weight's type.
template <bool BF16, int TILE>
__global__ void __launch_bounds__(32 * warps_per_block) mm_half_rows(const uint16_t* w, int64_t n_in, int64_t n_out,
                                                                      const float* xr, int64_t n_tok, float* y) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * warps_per_block + warp;
  if (o >= n_out) return;
  const int64_t t0 = int64_t(blockIdx.y) * TILE;
  const int nt = int(min(int64_t(TILE), n_tok - t0));
  const uint16_t* row = w + size_t(o) * size_t(n_in);
  float acc[TILE];
#pragma unroll
  for (int j = 0; j < TILE; ++j) acc[j] = 0.0f;
#pragma unroll 4
  for (int64_t i = int64_t(lane) * 8; i < n_in; i += 256) {
    const uint4 p = *reinterpret_cast<const uint4*>(row + i);
#pragma unroll
    for (int j = 0; j < TILE; ++j) {
      if (j >= nt) break;
      const float4* x4 = reinterpret_cast<const float4*>(xr + (t0 + j) * n_in + i);
      acc[j] = dot8<BF16>(p, x4[0], x4[1], acc[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < TILE; ++j) {
    const float v = warp_sum(acc[j]);
    if (lane == 0 && j < nt) y[(t0 + j) * n_out + o] = v;
  }
}

// One token, R rows per warp (as mm_q_planes_one): the per-row sums are formed as in mm_half_rows.
template <bool BF16, int R>
__global__ void __launch_bounds__(32 * warps_per_block) mm_half_rows_one(const uint16_t* w, int64_t n_in, int64_t n_out,
                                                                          const float* x, float* y) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o0 = (int64_t(blockIdx.x) * warps_per_block + warp) * R;
  if (o0 >= n_out) return;
  const uint16_t* row[R];
#pragma unroll
  for (int r = 0; r < R; ++r) row[r] = w + size_t(min(o0 + r, n_out - 1)) * size_t(n_in);
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
#pragma unroll 2
  for (int64_t i = int64_t(lane) * 8; i < n_in; i += 256) {
    uint4 p[R];
#pragma unroll
    for (int r = 0; r < R; ++r) p[r] = *reinterpret_cast<const uint4*>(row[r] + i);
    const float4* x4 = reinterpret_cast<const float4*>(x + i);
    const float4 a = x4[0], b = x4[1];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = dot8<BF16>(p[r], a, b, acc[r]);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float v = warp_sum(acc[r]);
    if (lane == 0 && o0 + r < n_out) y[o0 + r] = v;
  }
}

dim3 grid_for(int64_t n_out, int64_t n_tok, int tile) {
  return dim3(unsigned((n_out + warps_per_block - 1) / warps_per_block), unsigned((n_tok + tile - 1) / tile));
}

}  // namespace

static packed_targets targets_for(std::span<const packed_matrix> ws, std::span<float* const> ys, int rows_per_block) {
  packed_targets tg;
  tg.n = int(ws.size());
  tg.first_block[0] = 0;
  for (int m = 0; m < tg.n; ++m) {
    tg.quants[m] = static_cast<const uint8_t*>(ws[size_t(m)].quants);
    tg.scales[m] = static_cast<const uint16_t*>(ws[size_t(m)].scales);
    tg.n_out[m] = ws[size_t(m)].n_out;
    tg.y[m] = ys[size_t(m)];
    tg.first_block[m + 1] = tg.first_block[m] + unsigned((tg.n_out[m] + rows_per_block - 1) / rows_per_block);
  }
  return tg;
}

void quantize_q8_0_activations(cudaStream_t s, const float* x, int64_t n, int8_t* xq, float* xd, int* xsum) {
  const int64_t n_blocks = n / 32;
  if (n_blocks == 0) return;
  quantize_q8_0_kernel<<<unsigned((n_blocks + 7) / 8), 256, 0, s>>>(x, n_blocks, xq, xd, xsum);
  check_launch("quantize_q8_0_activations");
}

void matmul_packed(cudaStream_t s, std::span<const packed_matrix> ws, const int8_t* xq, const float* xd,
                   const int* xsum, int64_t n_tok, std::span<float* const> ys) {
  if (n_tok == 0 || ws.empty()) return;
  const int64_t nb = ws[0].n_in / 32;
  const bool q4 = ws[0].type == dtype::q4_0;
  constexpr int threads = 32 * warps_per_block;
  if (n_tok == 1) {
    // Several rows per warp share activation loads, but a small matrix needs every warp it can get.
    int64_t rows = 0;
    for (const packed_matrix& w : ws) rows += w.n_out;
    const bool wide = rows >= few_rows;
    const packed_targets tg = targets_for(ws, ys, warps_per_block * (wide ? rows_per_warp : 1));
    const dim3 grid(tg.first_block[tg.n]);
    if (wide) {
      if (q4) mm_q_planes_one<16, rows_per_warp><<<grid, threads, 0, s>>>(tg, nb, xq, xd, xsum);
      else mm_q_planes_one<32, rows_per_warp><<<grid, threads, 0, s>>>(tg, nb, xq, xd, xsum);
    } else {
      if (q4) mm_q_planes_one<16, 1><<<grid, threads, 0, s>>>(tg, nb, xq, xd, xsum);
      else mm_q_planes_one<32, 1><<<grid, threads, 0, s>>>(tg, nb, xq, xd, xsum);
    }
    check_launch("matmul_packed");
    return;
  }
  const packed_targets tg = targets_for(ws, ys, warps_per_block);
  // The tile only decides how many tokens share a weight load; each token's sum is formed alike.
  const dim3 grid(tg.first_block[tg.n], unsigned((n_tok + max_tile - 1) / max_tile));
  if (q4) mm_q_planes<16, max_tile><<<grid, threads, 0, s>>>(tg, nb, xq, xd, xsum, n_tok);
  else mm_q_planes<32, max_tile><<<grid, threads, 0, s>>>(tg, nb, xq, xd, xsum, n_tok);
  check_launch("matmul_packed");
}

bool half_rows_supported(const weight_view& w) {
  return (w.type == dtype::f16 || w.type == dtype::bf16) && w.n_in % 8 == 0 && w.row_stride == size_t(w.n_in) * 2 &&
         uintptr_t(w.data) % 16 == 0;
}

void matmul_half_rows(cudaStream_t s, const weight_view& w, const float* xr, int64_t n_tok, float* y) {
  if (n_tok == 0 || w.n_out == 0) return;
  const auto* data = static_cast<const uint16_t*>(w.data);
  const bool bf = w.type == dtype::bf16;
  if (n_tok == 1) {
    const int r = w.n_out >= few_rows ? 2 : 1;
    const dim3 g(unsigned((w.n_out + warps_per_block * r - 1) / (warps_per_block * r)));
    if (r == 2) {
      if (bf) mm_half_rows_one<true, 2><<<g, 32 * warps_per_block, 0, s>>>(data, w.n_in, w.n_out, xr, y);
      else mm_half_rows_one<false, 2><<<g, 32 * warps_per_block, 0, s>>>(data, w.n_in, w.n_out, xr, y);
    } else {
      if (bf) mm_half_rows_one<true, 1><<<g, 32 * warps_per_block, 0, s>>>(data, w.n_in, w.n_out, xr, y);
      else mm_half_rows_one<false, 1><<<g, 32 * warps_per_block, 0, s>>>(data, w.n_in, w.n_out, xr, y);
    }
  } else {
    const dim3 g = grid_for(w.n_out, n_tok, max_tile);
    if (bf) mm_half_rows<true, max_tile><<<g, 32 * warps_per_block, 0, s>>>(data, w.n_in, w.n_out, xr, n_tok, y);
    else mm_half_rows<false, max_tile><<<g, 32 * warps_per_block, 0, s>>>(data, w.n_in, w.n_out, xr, n_tok, y);
  }
  check_launch("matmul_half_rows");
}

}  // namespace glia::cuda
