// The one table of tensor types. Every type the engine knows has a row: its GGUF id, name, block
// geometry and reference (scalar) routines. Kernels, loaders and tests are all driven by this table,
// so a type is tested the moment its row exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace glia {

// Values are GGUF / ggml type ids (ggml.h `enum ggml_type`).
enum class dtype : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq4_nl = 20,
  iq4_xs = 23,
  bf16 = 30,
};

// Reference routines. `n` is the number of elements and must be a multiple of block_elems.
using dequantize_row_fn = void (*)(const void* src, float* dst, int64_t n);
using quantize_row_fn = void (*)(const float* src, void* dst, int64_t n);
// Dot product of one row of this type (`w`) with one activation row already in `dot_type` (`a`).
using vec_dot_fn = float (*)(const void* w, const void* a, int64_t n);

struct type_traits {
  dtype type;
  const char* name;        // GGUF / llama.cpp spelling: "F32", "Q4_K", "IQ4_XS"...
  int64_t block_elems;     // elements per block (1 for float types)
  size_t block_bytes;      // bytes per block
  bool is_quantized;
  dequantize_row_fn dequantize_row;  // scalar reference
  quantize_row_fn quantize_row;      // scalar reference (round to nearest, as the reference engine)
  // Format that activations are converted to before a dot product with this type, exactly as the
  // reference engine does (Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for k-quants and
  // IQ4_XS, F16 for F16, BF16 for BF16, F32 for F32), which keeps logits within rounding of it.
  dtype dot_type;
  vec_dot_fn vec_dot;  // scalar reference
};

// Row for a type id read from a file; nullptr when the id is unknown or not implemented.
const type_traits* find_type(uint32_t id);
// Row for a type the engine implements (asserts it exists).
const type_traits& type_info(dtype t);
// All implemented types (including the activation-only formats Q8_1 and Q8_K).
std::span<const type_traits> all_types();
// Name of any ggml type id, implemented or not ("type 17"-style text for unknown ids).
std::string_view type_name(uint32_t id);

// The float types' dot products (F32, F16, BF16) are this many chains of float FMAs, over
// contiguous segments of the row, segment s covering [float_dot_segment(n, s), float_dot_segment(n,
// s + 1)), with the segment sums added in order at the end. SIMD kernels run one token's segments
// side by side and so reproduce the reference bit for bit at full speed (one chain over the whole
// row would wait on the FMA's latency at every element); many tokens give them chains enough.
inline constexpr int float_dot_segments = 4;
inline int64_t float_dot_segment(int64_t n, int s) { return n * s / float_dot_segments; }

// Bytes of a row of n elements (n must be a multiple of the block size).
inline size_t row_bytes(const type_traits& t, int64_t n) { return size_t(n / t.block_elems) * t.block_bytes; }
inline size_t row_bytes(dtype t, int64_t n) { return row_bytes(type_info(t), n); }

}  // namespace glia
