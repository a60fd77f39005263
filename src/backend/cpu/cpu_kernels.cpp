#include "backend/cpu/cpu_kernels.h"

#include "core/cpu_features.h"
#include "core/fp16.h"
#include "quant/activation.h"

namespace glia::cpu {
namespace {

float scalar_dot_f32(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

float scalar_dot_f32_f16(const float* a, const uint16_t* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * fp16_to_f32(b[i]);
  return s;
}

void scalar_axpy_f32(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void scalar_axpy_f16(float alpha, const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * fp16_to_f32(x[i]);
}

void scalar_scale_f32(float* y, float alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= alpha;
}

kernel_table make_scalar_table() {
  kernel_table k;
  k.isa = "scalar";
  k.dot_f32 = scalar_dot_f32;
  k.dot_f32_f16 = scalar_dot_f32_f16;
  k.axpy_f32 = scalar_axpy_f32;
  k.axpy_f16 = scalar_axpy_f16;
  k.scale_f32 = scalar_scale_f32;
  for (const type_traits& t : all_types()) {
    const auto id = uint32_t(t.type);
    if (id < kernel_table::max_type_id && t.vec_dot) {
      k.vec_dot_by_id[id] = t.vec_dot;
      k.vec_dot_isa_by_id[id] = "scalar";
    }
  }
  return k;
}

// True when an ISA kernel was written for the block geometry the type table has.
bool geometry_matches(const vec_dot_entry& e) {
  const type_traits* t = find_type(uint32_t(e.type));
  if (!t || t->block_elems != e.block_elems || t->block_bytes != e.block_bytes || !t->vec_dot) return false;
  const type_traits* a = find_type(uint32_t(t->dot_type));
  return t->dot_type == e.dot_type && a && a->block_bytes == e.dot_block_bytes;
}

bool geometry_matches(const mm_kernel& e) {
  return geometry_matches(vec_dot_entry{e.type, e.block_elems, e.block_bytes, e.dot_type, e.dot_block_bytes, nullptr});
}

quantize_row_fn reference_of(act_quantizer q) {
  switch (q) {
    case act_quantizer::q8_0:
      return type_info(dtype::q8_0).quantize_row;
    case act_quantizer::q8_0_x86:
      return quant::quantize_row_q8_0_x86;
    case act_quantizer::q8_k:
      return type_info(dtype::q8_k).quantize_row;
    case act_quantizer::f16:
      return type_info(dtype::f16).quantize_row;
  }
  return nullptr;
}

void add_quantizer(kernel_table& k, quantize_row_fn reference, quantize_row_fn fast, const char* isa) {
  for (int i = 0; i < k.n_quantizers; ++i) {
    if (k.quantizers[i].reference == reference) {
      k.quantizers[i] = {reference, fast, isa};
      return;
    }
  }
  if (k.n_quantizers < kernel_table::max_quantizers) k.quantizers[k.n_quantizers++] = {reference, fast, isa};
}

template <typename F>
void take(F& slot, F candidate, const char* isa, const char*& best) {
  if (candidate) {
    slot = candidate;
    best = isa;
  }
}

kernel_table resolve() {
  kernel_table k = make_scalar_table();
  // Lowest priority first, so a better ISA overwrites what a weaker one set.
  struct candidate {
    const isa_kernels* isa;
    bool supported;
    std::span<const mm_kernel> mm[2];
  };
  const cpu_features& f = host_cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  // The AVX2 tables are only asked for where the host runs AVX2.
  const candidate by_priority[] = {
      {&avx2_kernels(), avx2, {avx2 ? avx2_mm_legacy() : std::span<const mm_kernel>{}, avx2 ? avx2_mm_kquants() : std::span<const mm_kernel>{}}}};
  for (const candidate& c : by_priority) {
    if (!c.supported) continue;
    const isa_kernels* isa = c.isa;
    take(k.dot_f32, isa->dot_f32, isa->name, k.isa);
    take(k.dot_f32_f16, isa->dot_f32_f16, isa->name, k.isa);
    take(k.axpy_f32, isa->axpy_f32, isa->name, k.isa);
    take(k.axpy_f16, isa->axpy_f16, isa->name, k.isa);
    take(k.scale_f32, isa->scale_f32, isa->name, k.isa);
    for (const vec_dot_entry& e : isa->vec_dots) {
      const auto id = uint32_t(e.type);
      if (id >= kernel_table::max_type_id || !e.fn || !geometry_matches(e)) continue;
      k.vec_dot_by_id[id] = e.fn;
      k.vec_dot_isa_by_id[id] = isa->name;
      k.isa = isa->name;
    }
    for (std::span<const mm_kernel> list : c.mm) {
      for (const mm_kernel& e : list) {
        const auto id = uint32_t(e.type);
        if (id >= kernel_table::max_type_id || !e.pack || !e.gemm || !e.gemv || !geometry_matches(e)) continue;
        if ((e.needs_block_sums && !e.block_sums) || !e.dot) continue;
        k.mm_by_id[id] = &e;
        k.mm_isa_by_id[id] = isa->name;
        k.vec_dot_by_id[id] = e.dot;
        k.vec_dot_isa_by_id[id] = isa->name;
        k.isa = isa->name;
      }
    }
    for (const quantize_entry& e : isa->quantizers) {
      const quantize_row_fn reference = reference_of(e.reproduces);
      if (reference && e.fn) add_quantizer(k, reference, e.fn, isa->name);
    }
  }
  return k;
}

}  // namespace

vec_dot_fn kernel_table::vec_dot(dtype t) const {
  const auto id = uint32_t(t);
  if (id < max_type_id && vec_dot_by_id[id]) return vec_dot_by_id[id];
  return type_info(t).vec_dot;
}

const char* kernel_table::vec_dot_isa(dtype t) const {
  const auto id = uint32_t(t);
  if (id < max_type_id && vec_dot_isa_by_id[id]) return vec_dot_isa_by_id[id];
  return "scalar";
}

const mm_kernel* kernel_table::mm(dtype t) const {
  const auto id = uint32_t(t);
  return id < max_type_id ? mm_by_id[id] : nullptr;
}

quantize_row_fn kernel_table::quantizer(quantize_row_fn reference) const {
  for (int i = 0; i < n_quantizers; ++i)
    if (quantizers[i].reference == reference) return quantizers[i].fast;
  return reference;
}

const kernel_table& kernels() {
  static const kernel_table table = resolve();
  return table;
}

const kernel_table& scalar_kernels() {
  static const kernel_table table = make_scalar_table();
  return table;
}

}  // namespace glia::cpu
