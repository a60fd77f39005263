// Launchers of the CUDA kernels (kernels_*.cu), called by the CUDA backend with device pointers
// only. Each kernel's reference twin is the same op of backend/ref; tests/backend_ops compares them.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>

#include "backend/op_types.h"

namespace glia::cuda {

// --- elementwise and row ops (kernels_rows.cu)
void rms_norm(cudaStream_t s, const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps);
void glu(cudaStream_t s, const float* gate, const float* up, float* out, int64_t n, activation act);
void add(cudaStream_t s, const float* a, const float* b, float* out, int64_t n);
void add_bias(cudaStream_t s, float* x, const float* bias, int64_t n_rows, int64_t n);
void scale(cudaStream_t s, float* x, float f, int64_t n);
void softcap(cudaStream_t s, float* x, float cap, int64_t n);
void find_nonfinite(cudaStream_t s, const float* x, int64_t n, nonfinite_record* record);
// p.freq_factors must be a device pointer (or null); k = ref::rope_constants_for(p).
void rope(cudaStream_t s, float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* positions,
          const rope_params& p, const rope_constants& k);
// kv's pointers are device pointers.
void kv_store(cudaStream_t s, const kv_layer_view& kv, const float* k, const float* v, const int32_t* positions,
              int64_t n_tok);

// --- weights (kernels_matmul.cu): `w` is a device copy of the matrix in the file's layout.
void get_rows(cudaStream_t s, const weight_view& w, const int32_t* ids, int64_t n_ids, float* out);
// xr [n_tok, n_in] = x rounded through the dot type of w's type (what the reference's activation
// quantizer stores, decoded back to float), so that a float dot product gives the reference's sum.
void round_activations(cudaStream_t s, dtype weight_type, const float* x, int64_t n_tok, int64_t n_in, float* xr);
void matmul(cudaStream_t s, const weight_view& w, const float* xr, int64_t n_tok, float* y);

// --- repacked Q4_0/Q8_0 and aligned F16/BF16 rows (kernels_packed.cu)
struct packed_matrix;
// Q8_0 activations of x [n] (n % 32 == 0) as the reference quantizes them: quants, scales (the
// fp16 scale as float) and per-block quant sums.
void quantize_q8_0_activations(cudaStream_t s, const float* x, int64_t n, int8_t* xq, float* xd, int* xsum);
// ys[i] = x . ws[i]^T for up to three matrices of one type and n_in, in one launch.
void matmul_packed(cudaStream_t s, std::span<const packed_matrix> ws, const int8_t* xq, const float* xd,
                   const int* xsum, int64_t n_tok, std::span<float* const> ys);
// F16/BF16 matrices whose rows are 16-byte aligned runs of n_in % 8 == 0 values.
bool half_rows_supported(const weight_view& w);
void matmul_half_rows(cudaStream_t s, const weight_view& w, const float* xr, int64_t n_tok, float* y);

// --- Q2_K..Q6_K and IQ4_XS in the file's layout against Q8_K activations (kernels_kquant.cu)
// Q8_K activations of x [n] (n % 256 == 0) as the reference quantizes them: quants, block scales
// and the sums of each 16 quants.
void quantize_q8_k_activations(cudaStream_t s, const float* x, int64_t n, int8_t* xq, float* xd, int16_t* xbs);
// Those matrices (rows aligned to what their blocks allow) with n_in % 256 == 0.
bool kquant_type(dtype t);
bool kquant_supported(const weight_view& w);
void matmul_kquant(cudaStream_t s, const weight_view& w, const int8_t* xq, const float* xd, const int16_t* xbs,
                   int64_t n_tok, float* y);

// --- attention (kernels_attention.cu)
// Splits of the slot range a launch uses, and the scratch floats it needs for them.
int attention_splits(int64_t n_tok, int n_head, int64_t n_slots);
size_t attention_scratch_floats(int64_t n_tok, int n_head, int head_dim_v, int n_splits);
void attention(cudaStream_t s, const kv_layer_view& kv, const float* q, const int32_t* positions, int64_t n_tok,
               const attention_params& p, float* out, float* scratch, int n_splits);

// Throws std::runtime_error naming the call when err is not cudaSuccess.
void check(cudaError_t err, const char* what);
// Checks the last launch.
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

}  // namespace glia::cuda
