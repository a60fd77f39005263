// Per-row building blocks of the reference ops. The optimized backends reuse the ones that are not
// hot (rope angles, activation formulas) so both compute the same function by construction.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace glia::ref {

// Dequantizes row r of `w` (n_in floats) with the type table's reference routine.
void dequantize_row(const weight_view& w, int64_t r, float* out);
// Converts an activation row [w.n_in] to the weight type's dot_type (bytes in `out`), the way the
// reference engine's x86 build does (quant/activation.h).
void convert_activation_row(const weight_view& w, const float* x, std::vector<uint8_t>& out);
// Reference dot of weight row r with an activation row already in dot_type.
float dot_row(const weight_view& w, int64_t r, const uint8_t* act);

// The sum of x[i]^2: each square rounded to float and accumulated in double, as ggml does, but in
// sixteen partial sums (element i into s[i % 16]), added as (d0 + d2) + (d1 + d3) with d_j =
// (s_j + s_j+8) + (s_j+4 + s_j+12): a fixed order that a vector loop of four 4-lane accumulators
// follows bit for bit (the CPU kernel), where ggml's single chain is bound by the latency of its
// adds (~4 cycles an element). The two orders' double sums differ by at most about n (typically
// sqrt(n)) double ulps, so the float mean differs from ggml's only when its sum lies that close to
// a float rounding midpoint: rarely, with 29 bits between the two precisions.
double sum_of_squares(const float* x, int64_t n);
using sum_of_squares_fn = double (*)(const float* x, int64_t n);
// y = x / sqrt(mean(x^2) + eps) * w (w may be null), mean(x^2) = sum(x, n) / n: sum_of_squares or
// an ISA twin with its bits (the CPU backend's), the rest of the row the same code.
void rms_norm_row(const float* x, const float* w, float* y, int64_t n, float eps,
                  sum_of_squares_fn sum = sum_of_squares);

// cos/sin for every rotated pair at position `pos`: cs[2i] = cos, cs[2i+1] = sin (n_rot values).
// Follows ggml_rope_ext: theta_i = pos * base^(-2i/n_rot) (accumulated by repeated multiplication in
// float, as ggml does), divided by freq_factors[i], YaRN-mixed between interpolation and
// extrapolation when ext_factor != 0, and both scaled by attn_factor (times YaRN's magnitude
// correction 1 + 0.1 ln(1/freq_scale)).
void rope_cos_sin(int32_t pos, const rope_params& p, float* cs);
// The constants rope_cos_sin derives from p (the CUDA kernel computes the angles on the device).
rope_constants rope_constants_for(const rope_params& p);
// Rotates one head of head_dim values in place with angles from rope_cos_sin.
void rope_apply(float* x, const rope_params& p, const float* cs);

// Inline: the reference attention asks it for every slot of the cache on every call (the CPU's
// visible_bits, cpu_kernels.h, is its vectorizable twin).
inline bool slot_visible(int32_t key_pos, int32_t query_pos, int window) {
  if (key_pos < 0 || key_pos > query_pos) return false;
  return window <= 0 || query_pos - key_pos < window;
}
// Stores token t's K and V rows in the slot of position pos. An f16 cache converts with to_f16 (a
// bit-exact twin of the type table's F16 row quantizer, e.g. the CPU backend's vector one), by
// default that quantizer itself.
void kv_store_token(const kv_layer_view& kv, const float* k, const float* v, int64_t t, int32_t pos,
                    quantize_row_fn to_f16 = nullptr);
// Copies (converting from f16 if needed) one head's row of slot s out of the K or V buffer, in any order.
void load_kv_row(const kv_layer_view& kv, kv_part part, int64_t slot, int kv_head, float* out);

// SiLU x / (1 + e^-x), or GELU (tanh approximation) evaluated the way ggml's CPU backend does: on the
// fp16-rounded input, through a table of fp16 results, exact outside [-10, 10].
float activate(float x, activation act);
float gelu_tanh_exact(float x);
// The GELU table activate reads: entry h is GELU of fp16 value h, rounded to fp16 (ISA twins of
// activate read the same table, so they give its bits).
const float* gelu_fp16_table();

}  // namespace glia::ref
