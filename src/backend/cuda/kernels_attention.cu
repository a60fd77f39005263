// Attention over the device-resident KV cache, split over the slots ("flash decoding"): block
// (query row, split) runs an online softmax over its share of the slots, each warp over every
// fourth slot, and writes (max, sum, weighted values); a second kernel merges the splits. One query
// token and head alone fills few blocks, so decode splits long caches across the GPU.
#include <algorithm>
#include <stdexcept>

#include "backend/cuda/block_decode.h"
#include "backend/cuda/kernels.h"

namespace glia::cuda {
namespace {

constexpr int warps = 4;
constexpr int max_per_lane = 16;  // head_dim <= 512

template <class T>
__device__ __forceinline__ float load_kv(const T* p);
template <>
__device__ __forceinline__ float load_kv<float>(const float* p) {
  return *p;
}
template <>
__device__ __forceinline__ float load_kv<uint16_t>(const uint16_t* p) {
  return half_to_float(*p);
}

__device__ __forceinline__ bool slot_visible(int32_t slot_pos, int32_t pos, int window) {
  if (slot_pos < 0 || slot_pos > pos) return false;
  return window <= 0 || pos - slot_pos < window;
}

struct attn_args {
  int n_head, group, head_dim_k, head_dim_v, n_kv_head, window, n_splits;
  int64_t n_slots, chunk;
  float scale, softcap;
};

// Partial results, `count` of them every `stride` floats, each [m, l, acc[head_dim_v]] (running
// max, sum of exp(score - m), and the exp-weighted values): merged by rescaling to the common max.
// Used for the warps of a block and for the splits of a row. A part that saw nothing has m = -inf.
__device__ float parts_max(const float* parts, int count, int stride) {
  float m = -INFINITY;
  for (int i = 0; i < count; ++i) m = fmaxf(m, parts[i * stride]);
  return m;
}
// A part with l = 0 saw no slot and is left out; one with l = NaN (a NaN score, whatever its m) is
// not, so the NaN reaches the output.
__device__ float parts_sum(const float* parts, int count, int stride, float m) {
  float l = 0.0f;
  for (int i = 0; i < count; ++i)
    if (parts[i * stride + 1] != 0.0f) l += parts[i * stride + 1] * expf(parts[i * stride] - m);
  return l;
}
__device__ float parts_value(const float* parts, int count, int stride, float m, int d) {
  float v = 0.0f;
  for (int i = 0; i < count; ++i)
    if (parts[i * stride + 1] != 0.0f) v += parts[i * stride + 2 + d] * expf(parts[i * stride] - m);
  return v;
}

// partial layout per (row, split): [m, l, acc[head_dim_v]].
// Each warp takes 32 slots at a time: lane l scores slot s0 + l (its own K row, 16-byte loads where
// the row allows), the warp updates its running max and sum once per 32 slots, then every lane
// accumulates its value dimensions over the 32 slots (coalesced V rows). 32 K rows are in flight
// per warp instead of one, which is what a decode step's short rows need.
// HD > 0: K and V heads of HD dimensions known at compile time, so the row loops unroll and their
// loads are issued together (a decode step is latency-bound otherwise); HD = 0 reads the sizes.
template <class T, int HD>
__global__ void __launch_bounds__(32 * warps) attention_split_kernel(const T* kc, const T* vc, const int32_t* slot_pos,
                                                                     const float* q, const int32_t* positions,
                                                                     attn_args a, float* partial, float* out) {
  const int64_t row = blockIdx.x;  // token * n_head + head
  const int split = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t t = row / a.n_head;
  const int h = int(row % a.n_head), kvh = h / a.group;
  const int32_t pos = positions[t];
  const int hdk = HD > 0 ? HD : a.head_dim_k, hdv = HD > 0 ? HD : a.head_dim_v;

  extern __shared__ float sm[];  // q [head_dim_k], then per warp [2 + head_dim_v]
  float* qs = sm;
  for (int d = threadIdx.x; d < hdk; d += blockDim.x) qs[d] = q[row * hdk + d];
  __syncthreads();

  float acc[max_per_lane];
#pragma unroll
  for (int j = 0; j < max_per_lane; ++j) acc[j] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const int64_t s0 = int64_t(split) * a.chunk, s1 = min(a.n_slots, s0 + a.chunk);
  for (int64_t base = s0 + int64_t(warp) * 32; base < s1; base += int64_t(warps) * 32) {
    const int64_t s = base + lane;
    float sc = -INFINITY;
    if (s < s1 && slot_visible(slot_pos[s], pos, a.window)) {
      const T* kr = kc + (s * a.n_kv_head + kvh) * hdk;
      float dot = 0.0f;
      if constexpr (sizeof(T) == 2) {
        if (hdk % 8 == 0) {  // 8 keys per 16-byte load; same order of the sum
#pragma unroll
          for (int d = 0; d < hdk; d += 8) {
            const uint4 u = *reinterpret_cast<const uint4*>(kr + d);
            const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              dot = fmaf(qs[d + 2 * e], half_to_float(uint16_t(w[e] & 0xFFFF)), dot);
              dot = fmaf(qs[d + 2 * e + 1], half_to_float(uint16_t(w[e] >> 16)), dot);
            }
          }
        } else {
          for (int d = 0; d < hdk; ++d) dot = fmaf(qs[d], load_kv(kr + d), dot);
        }
      } else {
#pragma unroll 8
        for (int d = 0; d < hdk; ++d) dot = fmaf(qs[d], load_kv(kr + d), dot);
      }
      sc = dot * a.scale;
      if (a.softcap > 0.0f) sc = a.softcap * tanhf(sc / a.softcap);
    }
    float cmax = sc;
    for (int off = 16; off > 0; off >>= 1) cmax = fmaxf(cmax, __shfl_xor_sync(0xffffffffu, cmax, off));
    // Nothing visible in these 32 slots. fmaxf skips NaN, so a group whose visible scores are all NaN
    // (a broken Q or K) also has cmax = -inf: it goes on, and its NaN reaches l and the output.
    if (cmax == -INFINITY && !__any_sync(0xffffffffu, isnan(sc))) continue;
    const float m_new = fmaxf(m, cmax);
    const float corr = expf(m - m_new);  // 0 while nothing was seen (m = -inf)
    const float p = sc == -INFINITY ? 0.0f : expf(sc - m_new);
    float psum = p;
    for (int off = 16; off > 0; off >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, off);
    l = l * corr + psum;
#pragma unroll
    for (int j = 0; j < max_per_lane; ++j) acc[j] *= corr;
    // Every row is loaded (past the end: the last slot's) so the loads need no branch; a slot
    // that is not visible (p = 0) may hold anything, even NaN, and is never multiplied in.
#pragma unroll 8
    for (int i = 0; i < 32; ++i) {
      const float pi = __shfl_sync(0xffffffffu, p, i);
      const T* vr = vc + (min(base + i, a.n_slots - 1) * a.n_kv_head + kvh) * hdv;
#pragma unroll
      for (int j = 0; j < max_per_lane; ++j) {
        const int d = lane + 32 * j;
        if (d < hdv) {
          const float v = load_kv(vr + d);
          acc[j] = pi != 0.0f ? fmaf(pi, v, acc[j]) : acc[j];
        }
      }
    }
    m = m_new;
  }

  // Merge the warps through shared memory.
  const int stride = 2 + hdv;
  float* mine = sm + hdk + warp * stride;
  if (lane == 0) {
    mine[0] = m;
    mine[1] = l;
  }
#pragma unroll
  for (int j = 0; j < max_per_lane; ++j) {
    const int d = lane + 32 * j;
    if (d < hdv) mine[2 + d] = acc[j];
  }
  __syncthreads();
  const float* all = sm + hdk;
  const float mm = parts_max(all, warps, stride), ll = parts_sum(all, warps, stride, mm);
  for (int d = threadIdx.x; d < hdv; d += blockDim.x) {
    const float v = parts_value(all, warps, stride, mm, d);
    if (a.n_splits == 1) {
      out[row * hdv + d] = ll != 0.0f ? v / ll : 0.0f;  // NaN (from a NaN score) passes on
    } else {
      float* pr = partial + (row * a.n_splits + split) * stride;
      pr[2 + d] = v;
      if (d == 0) {
        pr[0] = mm;
        pr[1] = ll;
      }
    }
  }
}

__global__ void attention_merge_kernel(const float* partial, int n_splits, int head_dim_v, float* out) {
  const int64_t row = blockIdx.x;
  const int stride = 2 + head_dim_v;
  const float* pr = partial + row * n_splits * stride;
  const float mm = parts_max(pr, n_splits, stride), ll = parts_sum(pr, n_splits, stride, mm);
  for (int d = threadIdx.x; d < head_dim_v; d += blockDim.x) {
    const float v = parts_value(pr, n_splits, stride, mm, d);
    out[row * head_dim_v + d] = ll != 0.0f ? v / ll : 0.0f;
  }
}

}  // namespace

// Enough blocks for about four per multiprocessor of a large GPU, and at least one round of the
// block's warps (4 x 32 slots) per split. Passes of up to 32 tokens split as one token does: a row's
// result depends on the split, and a speculative verification pass (or a server's short prompt)
// must give each row the bits a one-token step gives it.
int attention_splits(int64_t n_tok, int n_head, int64_t n_slots) {
  const int64_t rows = (n_tok <= 32 ? 1 : n_tok) * n_head;
  const int64_t want = (528 + rows - 1) / rows;
  const int64_t most = std::max<int64_t>(1, n_slots / (32 * warps));
  return int(std::clamp<int64_t>(want, 1, std::min<int64_t>(most, 256)));
}

size_t attention_scratch_floats(int64_t n_tok, int n_head, int head_dim_v, int n_splits) {
  return n_splits <= 1 ? 0 : size_t(n_tok) * size_t(n_head) * size_t(n_splits) * size_t(2 + head_dim_v);
}

void attention(cudaStream_t s, const kv_layer_view& kv, const float* q, const int32_t* positions, int64_t n_tok,
               const attention_params& p, float* out, float* scratch, int n_splits) {
  if (n_tok == 0) return;
  if (kv.head_dim_k > 32 * max_per_lane || kv.head_dim_v > 32 * max_per_lane)
    throw std::runtime_error("the CUDA attention kernel supports head dimensions up to 512");
  attn_args a{};
  a.n_head = p.n_head;
  a.group = p.n_head / kv.n_kv_head;
  a.head_dim_k = kv.head_dim_k;
  a.head_dim_v = kv.head_dim_v;
  a.n_kv_head = kv.n_kv_head;
  a.window = p.window;
  a.n_splits = n_splits;
  a.n_slots = kv.n_slots;
  a.chunk = (kv.n_slots + n_splits - 1) / n_splits;
  a.scale = p.scale;
  a.softcap = p.softcap;
  const dim3 grid(unsigned(n_tok * p.n_head), unsigned(n_splits));
  const size_t shared = (size_t(kv.head_dim_k) + size_t(warps) * size_t(2 + kv.head_dim_v)) * sizeof(float);
  const int hd = kv.head_dim_k == kv.head_dim_v ? kv.head_dim_k : 0;
  auto launch = [&]<class T, int HD>() {
    attention_split_kernel<T, HD><<<grid, 32 * warps, shared, s>>>(static_cast<const T*>(kv.k), static_cast<const T*>(kv.v),
                                                                   kv.slot_pos, q, positions, a, scratch, out);
  };
  auto by_dim = [&]<class T>() {
    if (hd == 64) launch.template operator()<T, 64>();
    else if (hd == 128) launch.template operator()<T, 128>();
    else if (hd == 256) launch.template operator()<T, 256>();
    else launch.template operator()<T, 0>();
  };
  if (kv.type == dtype::f32) by_dim.template operator()<float>();
  else by_dim.template operator()<uint16_t>();
  check_launch("attention");
  if (n_splits > 1) {
    attention_merge_kernel<<<unsigned(n_tok * p.n_head), 128, 0, s>>>(scratch, n_splits, kv.head_dim_v, out);
    check_launch("attention merge");
  }
}

}  // namespace glia::cuda
