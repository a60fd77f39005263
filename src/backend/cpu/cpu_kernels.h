// The hot inner loops of the CPU backend, with one implementation per instruction set. Each ISA file
// (vec_dot_avx2.cpp today; AVX-512 or NEON later) exports an isa_kernels record; kernels() picks,
// per entry, the first ISA in priority order that the host supports and that has the entry, and
// falls back to the scalar twins (the type table's reference vec_dot for weights).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "quant/types.h"

namespace glia::cpu {

// A weight-type dot product written for one ISA. The block geometry it was written for is checked
// against the type table before the kernel is used, so a layout change can never be misread.
struct vec_dot_entry {
  dtype type;
  int64_t block_elems;
  size_t block_bytes;
  dtype dot_type;          // activation format the kernel reads
  size_t dot_block_bytes;  // and its block size in bytes
  vec_dot_fn fn;           // (weight row, activation row in dot_type, n)
};

// Activation quantizers with fast twins, named by the reference routine a twin reproduces bit for
// bit: the type table's quantize_row of Q8_0 / Q8_K / F16, or the x86 variant of Q8_0
// (quant/activation.h). A twin is used only where matmul asks for exactly that reference.
enum class act_quantizer { q8_0, q8_0_x86, q8_k, f16 };

struct quantize_entry {
  act_quantizer reproduces;
  quantize_row_fn fn;
};

using dot_f32_fn = float (*)(const float* a, const float* b, int64_t n);
using dot_f32_f16_fn = float (*)(const float* a, const uint16_t* b, int64_t n);
using axpy_f32_fn = void (*)(float alpha, const float* x, float* y, int64_t n);  // y += alpha x
using axpy_f16_fn = void (*)(float alpha, const uint16_t* x, float* y, int64_t n);
using scale_f32_fn = void (*)(float* y, float alpha, int64_t n);                 // y *= alpha

// What one instruction set provides; null members mean "not written for this ISA".
struct isa_kernels {
  const char* name;
  std::span<const vec_dot_entry> vec_dots;
  std::span<const quantize_entry> quantizers;
  dot_f32_fn dot_f32;
  dot_f32_f16_fn dot_f32_f16;
  axpy_f32_fn axpy_f32;
  axpy_f16_fn axpy_f16;
  scale_f32_fn scale_f32;
};

// ISA records, defined in their own files (compiled with that ISA's flags: they must only be called
// after the host check in cpu_kernels.cpp, and must not define inline functions shared with other
// files, or the linker could keep the ISA-flavoured copy for everyone).
const isa_kernels& avx2_kernels();

// The resolved table for this host.
struct kernel_table {
  const char* isa = "scalar";  // best ISA that contributed at least one kernel
  dot_f32_fn dot_f32 = nullptr;
  dot_f32_f16_fn dot_f32_f16 = nullptr;
  axpy_f32_fn axpy_f32 = nullptr;
  axpy_f16_fn axpy_f16 = nullptr;
  scale_f32_fn scale_f32 = nullptr;
  static constexpr uint32_t max_type_id = 64;
  vec_dot_fn vec_dot_by_id[max_type_id] = {};
  const char* vec_dot_isa_by_id[max_type_id] = {};
  struct quantizer_twin {
    quantize_row_fn reference = nullptr;
    quantize_row_fn fast = nullptr;
    const char* isa = nullptr;
  };
  static constexpr int max_quantizers = 8;
  quantizer_twin quantizers[max_quantizers] = {};
  int n_quantizers = 0;

  // Fastest dot for weights of type t (the reference routine when no ISA has one).
  vec_dot_fn vec_dot(dtype t) const;
  // Name of the ISA whose kernel vec_dot(t) returns ("scalar" for the reference).
  const char* vec_dot_isa(dtype t) const;
  // Fastest routine with exactly the results of `reference` (a quantize_row_fn); the reference
  // itself when no twin exists.
  quantize_row_fn quantizer(quantize_row_fn reference) const;
};

// Resolved once for the host CPU.
const kernel_table& kernels();
// Scalar-only table (the reference twins): what a CPU without any SIMD extension would use.
const kernel_table& scalar_kernels();

}  // namespace glia::cpu
