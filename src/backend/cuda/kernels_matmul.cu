// Weight kernels: embedding rows, activation rounding, and the matrix product. Weights stay in the
// file's block layout and are decoded in registers (block_decode.h); one warp owns an output row,
// its lanes take 32-element groups, and each decoded group is used for up to `tile` tokens.
#include <stdexcept>
#include <string>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/kernels.h"
#include "quant/types.h"

namespace glia::cuda {
namespace {

constexpr int warps_per_block = 8;

template <dtype T>
__global__ void get_rows_kernel(const uint8_t* table, size_t stride, int64_t n_in, const int32_t* ids, float* out) {
  const uint8_t* row = table + size_t(ids[blockIdx.x]) * stride;
  float* dst = out + int64_t(blockIdx.x) * n_in;
  const int64_t groups = n_in / 32;
  for (int64_t g = threadIdx.x; g < groups; g += blockDim.x) {
    float v[32];
    decode32(T, row, g, v);
#pragma unroll
    for (int i = 0; i < 32; ++i) dst[g * 32 + i] = v[i];
  }
  for (int64_t i = groups * 32 + threadIdx.x; i < n_in; i += blockDim.x) dst[i] = decode1(T, row, i);
}

// One thread per activation block: the blocks are independent, and n_tok * n_in / 32 threads keep
// the GPU busy for any prompt worth a launch.
template <int Q>
__global__ void round_q8_kernel(const float* x, float* xr, int64_t n_blocks) {
  const int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n_blocks) return;
  if constexpr (Q == 0) round_trip_q8_0(x + b * 32, xr + b * 32);
  else if constexpr (Q == 1) round_trip_q8_1(x + b * 32, xr + b * 32);
  else round_trip_q8_k(x + b * 256, xr + b * 256);
}

template <int B>
__global__ void round_half_kernel(const float* x, float* xr, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  xr[i] = B ? round_trip_bf16(x[i]) : round_trip_f16(x[i]);
}

// y [n_tok, n_out]: warp w of block (bx, by) computes row bx * 8 + w for tokens by * TILE ... The
// per-token sum is formed the same way whatever the tile, so a token's row never depends on the
// others in the batch.
template <dtype T, int TILE>
__global__ void __launch_bounds__(32 * warps_per_block) matmul_kernel(const uint8_t* w, size_t stride, int64_t n_in,
                                                                      int64_t n_out, const float* xr, int64_t n_tok,
                                                                      float* y) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o = int64_t(blockIdx.x) * warps_per_block + warp;
  const int64_t t0 = int64_t(blockIdx.y) * TILE;
  if (o >= n_out) return;
  const int nt = int(min(int64_t(TILE), n_tok - t0));
  const uint8_t* row = w + size_t(o) * stride;
  const float* x0 = xr + t0 * n_in;
  const bool vec4 = n_in % 4 == 0;
  float acc[TILE];
#pragma unroll
  for (int j = 0; j < TILE; ++j) acc[j] = 0.0f;
  const int64_t groups = n_in / 32;
  for (int64_t g = lane; g < groups; g += 32) {
    float wv[32];
    decode32(T, row, g, wv);
#pragma unroll
    for (int j = 0; j < TILE; ++j) {
      if (j >= nt) break;
      const float* xg = x0 + j * n_in + g * 32;
      float s = 0.0f;
      if (vec4) {
        const float4* x4 = reinterpret_cast<const float4*>(xg);
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const float4 a = x4[q];
          s = fmaf(wv[4 * q], a.x, s);
          s = fmaf(wv[4 * q + 1], a.y, s);
          s = fmaf(wv[4 * q + 2], a.z, s);
          s = fmaf(wv[4 * q + 3], a.w, s);
        }
      } else {
#pragma unroll
        for (int i = 0; i < 32; ++i) s = fmaf(wv[i], xg[i], s);
      }
      acc[j] += s;
    }
  }
  for (int64_t i = groups * 32 + lane; i < n_in; i += 32) {
    const float wi = decode1(T, row, i);
#pragma unroll
    for (int j = 0; j < TILE; ++j)
      if (j < nt) acc[j] = fmaf(wi, x0[j * n_in + i], acc[j]);
  }
#pragma unroll
  for (int j = 0; j < TILE; ++j) {
    float v = acc[j];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0 && j < nt) y[(t0 + j) * n_out + o] = v;
  }
}

template <dtype T>
void launch_matmul(cudaStream_t s, const weight_view& w, const float* xr, int64_t n_tok, float* y) {
  const auto* data = static_cast<const uint8_t*>(w.data);
  const unsigned bx = unsigned((w.n_out + warps_per_block - 1) / warps_per_block);
  if (n_tok == 1) {
    matmul_kernel<T, 1><<<dim3(bx, 1), 32 * warps_per_block, 0, s>>>(data, w.row_stride, w.n_in, w.n_out, xr, n_tok, y);
  } else {
    constexpr int tile = 8;
    matmul_kernel<T, tile><<<dim3(bx, unsigned((n_tok + tile - 1) / tile)), 32 * warps_per_block, 0, s>>>(
        data, w.row_stride, w.n_in, w.n_out, xr, n_tok, y);
  }
}

template <dtype T>
void launch_get_rows(cudaStream_t s, const weight_view& w, const int32_t* ids, int64_t n_ids, float* out) {
  get_rows_kernel<T><<<unsigned(n_ids), 128, 0, s>>>(static_cast<const uint8_t*>(w.data), w.row_stride, w.n_in, ids, out);
}

// Calls f.template operator()<T>() for the weight type t (every type block_decode.h decodes).
template <class F>
void with_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f.template operator()<dtype::f32>();
    case dtype::f16: return f.template operator()<dtype::f16>();
    case dtype::bf16: return f.template operator()<dtype::bf16>();
    case dtype::q4_0: return f.template operator()<dtype::q4_0>();
    case dtype::q4_1: return f.template operator()<dtype::q4_1>();
    case dtype::q5_0: return f.template operator()<dtype::q5_0>();
    case dtype::q5_1: return f.template operator()<dtype::q5_1>();
    case dtype::q8_0: return f.template operator()<dtype::q8_0>();
    case dtype::q8_1: return f.template operator()<dtype::q8_1>();
    case dtype::q2_k: return f.template operator()<dtype::q2_k>();
    case dtype::q3_k: return f.template operator()<dtype::q3_k>();
    case dtype::q4_k: return f.template operator()<dtype::q4_k>();
    case dtype::q5_k: return f.template operator()<dtype::q5_k>();
    case dtype::q6_k: return f.template operator()<dtype::q6_k>();
    case dtype::q8_k: return f.template operator()<dtype::q8_k>();
    case dtype::iq4_nl: return f.template operator()<dtype::iq4_nl>();
    case dtype::iq4_xs: return f.template operator()<dtype::iq4_xs>();
  }
  throw std::runtime_error(std::string("the CUDA backend has no kernel for type ") + type_info(t).name);
}

}  // namespace

void get_rows(cudaStream_t s, const weight_view& w, const int32_t* ids, int64_t n_ids, float* out) {
  if (n_ids == 0) return;
  with_type(w.type, [&]<dtype T>() { launch_get_rows<T>(s, w, ids, n_ids, out); });
  check_launch("get_rows");
}

void round_activations(cudaStream_t s, dtype weight_type, const float* x, int64_t n_tok, int64_t n_in, float* xr) {
  const int64_t n = n_tok * n_in;
  if (n == 0) return;
  constexpr int threads = 256;
  const auto blocks = [](int64_t k) { return unsigned((k + threads - 1) / threads); };
  switch (type_info(weight_type).dot_type) {
    case dtype::q8_0: round_q8_kernel<0><<<blocks(n / 32), threads, 0, s>>>(x, xr, n / 32); break;
    case dtype::q8_1: round_q8_kernel<1><<<blocks(n / 32), threads, 0, s>>>(x, xr, n / 32); break;
    case dtype::q8_k: round_q8_kernel<2><<<blocks(n / 256), threads, 0, s>>>(x, xr, n / 256); break;
    case dtype::f16: round_half_kernel<0><<<blocks(n), threads, 0, s>>>(x, xr, n); break;
    case dtype::bf16: round_half_kernel<1><<<blocks(n), threads, 0, s>>>(x, xr, n); break;
    default: check(cudaMemcpyAsync(xr, x, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, s), "round_activations copy");
  }
  check_launch("round_activations");
}

void matmul(cudaStream_t s, const weight_view& w, const float* xr, int64_t n_tok, float* y) {
  if (n_tok == 0 || w.n_out == 0) return;
  with_type(w.type, [&]<dtype T>() { launch_matmul<T>(s, w, xr, n_tok, y); });
  check_launch("matmul");
}

}  // namespace glia::cuda
