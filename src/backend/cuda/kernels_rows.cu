// Row and elementwise kernels: norms, activations, residual adds, RoPE, the KV store, the
// non-finite scan. Each follows its reference twin's formula and rounding (backend/ref).
#include <stdexcept>
#include <string>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/kernels.h"

namespace glia::cuda {
namespace {

constexpr int threads = 256;

unsigned blocks_for(int64_t n) { return unsigned((n + threads - 1) / threads); }

template <class T>
__device__ T block_reduce_sum(T v, T* shared) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = 0;
  for (int i = 0; i < int(blockDim.x / 32); ++i) total += shared[i];
  __syncthreads();
  return total;
}

// As the reference: the sum of float squares accumulated in double.
__global__ void rms_norm_kernel(const float* x, const float* w, float* y, int64_t n, float eps) {
  __shared__ double part[32];
  const float* xr = x + int64_t(blockIdx.x) * n;
  float* yr = y + int64_t(blockIdx.x) * n;
  double sum = 0.0;
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += double(xr[i] * xr[i]);
  sum = block_reduce_sum(sum, part);
  const float mean = float(sum / double(n));
  const float s = 1.0f / sqrtf(mean + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = w ? (xr[i] * s) * w[i] : xr[i] * s;
}

__device__ float gelu_tanh_exact(float x) {
  constexpr float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
  constexpr float coef_a = 0.044715f;
  return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

// GELU as the reference engine's table: of the input rounded to fp16, rounded to fp16.
__device__ float gelu_fp16(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return round_trip_f16(gelu_tanh_exact(round_trip_f16(x)));
}

__global__ void glu_kernel(const float* gate, const float* up, float* out, int64_t n, int gelu) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  const float a = gelu ? gelu_fp16(g) : g / (1.0f + expf(-g));
  out[i] = a * up[i];
}

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void add_bias_kernel(float* x, const float* bias, int64_t n_rows, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n_rows * n) x[i] += bias[i % n];
}

__global__ void scale_kernel(float* x, float f, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= f;
}

__global__ void softcap_kernel(float* x, float cap, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = cap * tanhf(x[i] / cap);
}

// One block scans everything: the first non-finite index is a minimum over the block, and the
// record is always written (so a replayed step needs no reset).
__global__ void find_nonfinite_kernel(const float* x, int64_t n, nonfinite_record* record) {
  __shared__ long long best[32];
  long long first = LLONG_MAX;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if (!isfinite(x[i])) {
      first = i;
      break;
    }
  for (int off = 16; off > 0; off >>= 1) first = min(first, __shfl_xor_sync(0xffffffffu, first, off));
  if (threadIdx.x % 32 == 0) best[threadIdx.x / 32] = first;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long m = LLONG_MAX;
    for (int w = 0; w < int(blockDim.x / 32); ++w) m = min(m, best[w]);
    record->index = m == LLONG_MAX ? -1 : int64_t(m);
    record->value = m == LLONG_MAX ? 0.0f : x[m];
  }
}

// One thread per (row, pair). theta_i = pos * theta_scale^i by repeated multiplication, as the
// reference accumulates it.
__global__ void rope_kernel(float* x, int64_t n_rows, int n_head, int head_dim, const int32_t* positions,
                            rope_params p, rope_constants k) {
  const int half = p.n_rot / 2;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_rows * half) return;
  const int64_t row = idx / half;
  const int i = int(idx % half);
  const int64_t t = row / n_head;
  float theta = float(positions[t]);
  for (int j = 0; j < i; ++j) theta *= k.theta_scale;
  const int i0 = 2 * i;
  const float ff = p.freq_factors ? p.freq_factors[i] : 1.0f;
  const float theta_extrap = theta / ff;
  const float theta_interp = p.freq_scale * theta_extrap;
  float angle = theta_interp;
  if (p.ext_factor != 0.0f) {
    const float y = (float(i0 / 2) - k.corr_low) / fmaxf(0.001f, k.corr_high - k.corr_low);
    const float ramp_mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * p.ext_factor;
    angle = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
  }
  const float cs = cosf(angle) * k.mscale, sn = sinf(angle) * k.mscale;
  float* xr = x + row * head_dim;
  const int a = p.style == rope_style::neox ? i : 2 * i;
  const int b = p.style == rope_style::neox ? i + half : 2 * i + 1;
  const float x0 = xr[a], x1 = xr[b];
  xr[a] = x0 * cs - x1 * sn;
  xr[b] = x0 * sn + x1 * cs;
}

template <class T>
__device__ void store_value(T* dst, float v);
template <>
__device__ void store_value<float>(float* dst, float v) {
  *dst = v;
}
template <>
__device__ void store_value<uint16_t>(uint16_t* dst, float v) {
  *dst = float_to_half(v);
}

// A batch longer than a sliding-window ring writes some slots twice; as in the reference (tokens
// stored in order) the later token wins, so a token whose slot a later one takes writes nothing.
template <class T>
__global__ void kv_store_kernel(T* kc, T* vc, int32_t* slot_pos, int64_t n_slots, int64_t row_k, int64_t row_v,
                                const float* k, const float* v, const int32_t* positions, int64_t n_tok) {
  const int64_t per_tok = row_k + row_v;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_tok * per_tok) return;
  const int64_t t = idx / per_tok, e = idx % per_tok;
  const int32_t pos = positions[t];
  const int64_t slot = pos % n_slots;
  if (n_tok > n_slots)
    for (int64_t later = t + 1; later < n_tok; ++later)
      if (positions[later] % n_slots == slot) return;
  if (e < row_k) store_value(kc + slot * row_k + e, k[t * row_k + e]);
  else store_value(vc + slot * row_v + (e - row_k), v[t * row_v + (e - row_k)]);
  if (e == 0) slot_pos[slot] = pos;
}

}  // namespace

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err));
}

void rms_norm(cudaStream_t s, const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) {
  if (n_rows == 0) return;
  // A row is one block: wide rows get more threads, so each has few loads to wait for.
  rms_norm_kernel<<<unsigned(n_rows), n >= 4096 ? 1024 : threads, 0, s>>>(x, w, y, n, eps);
  check_launch("rms_norm");
}

void glu(cudaStream_t s, const float* gate, const float* up, float* out, int64_t n, activation act) {
  if (n == 0) return;
  glu_kernel<<<blocks_for(n), threads, 0, s>>>(gate, up, out, n, act == activation::gelu_tanh);
  check_launch("glu");
}

void add(cudaStream_t s, const float* a, const float* b, float* out, int64_t n) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n), threads, 0, s>>>(a, b, out, n);
  check_launch("add");
}

void add_bias(cudaStream_t s, float* x, const float* bias, int64_t n_rows, int64_t n) {
  if (n_rows * n == 0) return;
  add_bias_kernel<<<blocks_for(n_rows * n), threads, 0, s>>>(x, bias, n_rows, n);
  check_launch("add_bias");
}

void scale(cudaStream_t s, float* x, float f, int64_t n) {
  if (n == 0) return;
  scale_kernel<<<blocks_for(n), threads, 0, s>>>(x, f, n);
  check_launch("scale");
}

void softcap(cudaStream_t s, float* x, float cap, int64_t n) {
  if (n == 0) return;
  softcap_kernel<<<blocks_for(n), threads, 0, s>>>(x, cap, n);
  check_launch("softcap");
}

void find_nonfinite(cudaStream_t s, const float* x, int64_t n, nonfinite_record* record) {
  find_nonfinite_kernel<<<1, 1024, 0, s>>>(x, n, record);
  check_launch("find_nonfinite");
}

void rope(cudaStream_t s, float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* positions,
          const rope_params& p, const rope_constants& k) {
  if (n_tok == 0 || p.n_rot < 2) return;
  const int64_t n_rows = n_tok * n_head;
  rope_kernel<<<blocks_for(n_rows * (p.n_rot / 2)), threads, 0, s>>>(x, n_rows, n_head, head_dim, positions, p, k);
  check_launch("rope");
}

void kv_store(cudaStream_t s, const kv_layer_view& kv, const float* k, const float* v, const int32_t* positions,
              int64_t n_tok) {
  if (n_tok == 0) return;
  const int64_t row_k = int64_t(kv.n_kv_head) * kv.head_dim_k, row_v = int64_t(kv.n_kv_head) * kv.head_dim_v;
  const unsigned blocks = blocks_for(n_tok * (row_k + row_v));
  if (kv.type == dtype::f32)
    kv_store_kernel<float><<<blocks, threads, 0, s>>>(static_cast<float*>(kv.k), static_cast<float*>(kv.v), kv.slot_pos,
                                                      kv.n_slots, row_k, row_v, k, v, positions, n_tok);
  else
    kv_store_kernel<uint16_t><<<blocks, threads, 0, s>>>(static_cast<uint16_t*>(kv.k), static_cast<uint16_t*>(kv.v),
                                                         kv.slot_pos, kv.n_slots, row_k, row_v, k, v, positions, n_tok);
  check_launch("kv_store");
}

}  // namespace glia::cuda
