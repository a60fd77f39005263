#include "backend/cpu/cpu_kernels.h"

#include <vector>

#include "backend/ref/ref_ops.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "quant/activation.h"

namespace glia::cpu {

void scalar_glu(const float* gate, const float* up, float* out, int64_t n, activation act) {
  for (int64_t i = 0; i < n; ++i) out[i] = ref::activate(gate[i], act) * up[i];
}
namespace {

kernel_table make_scalar_table() {
  kernel_table k;
  k.isa = "scalar";
  k.attend = scalar_attend;
  k.glu = scalar_glu;
  k.sum_of_squares = ref::sum_of_squares;
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
    case act_quantizer::q8_1_x86:
      return quant::quantize_row_q8_1_x86;
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

// The decode forms of the kernels, as measured per core (figures with decode_form in
// panel_vectors.h). AVX-512 panel pairs: AMD's cores pair the k-quants, and Q4_0 too on Zen 5
// (full width; Zen 4 reads Q4_0 faster single, the Intel host of session 28 too); the other 4-
// and 5-bit legacy types follow Q4_0 (mm_legacy_kernels.h), Q8_0 reads single panels everywhere.
// The prefetch (k-quants: whole blocks; two streams: 1 KiB ahead) of AMD's cores on AMD's and
// Hygon's (Zen-derived), spread (2 KiB) on the rest; except that the AVX2 k-quant kernels prefetch
// whole blocks only on AMD's cores with AVX-512 (Zen 4, where they were tuned and run only under
// --cpu-isa avx2) and spread on the AVX2-only ones. Zen 3 (session 39, TinyLlama Q4_K_M, `glia
// bench -p 0 -n 64 -r 2`, 11 alternated rounds, means): 1 thread 27.7 -> 31.6 t/s (+14%), 2
// threads 45.4 -> 48.3; the same spread form with its prefetches into L2 instead of L1 was as fast
// (32.3), so what counts is that a block's 36 requests (two streams) no longer leave together. The
// legacy types' streams kept AMD's form there (Q8_0 1 thread 22.3 against 20.8 t/s spread, Q4_0
// even).
#if defined(__x86_64__)
struct decode_forms {
  bool q4_0_pairs, amd, avx2_kquants_whole_blocks;
};
decode_forms decode_forms_on(const cpu_features& f) {
  return {f.avx512_amd && f.avx512_full_width, f.amd, f.amd && f.avx512f};
}
#endif

kernel_table resolve(isa_level max_level) {
  kernel_table k = make_scalar_table();
  // Lowest priority first, so a better ISA overwrites what a weaker one set. An ISA's functions
  // are only called (even to fetch its tables) where the host runs that ISA.
  struct candidate {
    const isa_kernels* isa;
    std::span<const mm_kernel> mm[3];
    attend_fn attend;
    glu_fn glu;
    sum_of_squares_fn sum_of_squares;
  };
  std::vector<candidate> by_priority;
#if defined(__x86_64__)  // the x86 kernels are built on x86-64 only (CMakeLists.txt)
  const cpu_features& f = host_cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const decode_forms forms = decode_forms_on(f);
  if (avx2 && max_level >= isa_level::avx2)
    by_priority.push_back({&avx2_kernels(),
                           {avx2_mm_legacy(forms.amd), avx2_mm_kquants(forms.avx2_kquants_whole_blocks), avx2_mm_float()},
                           avx2_attend(),
                           avx2_glu(),
                           avx2_sum_of_squares()});
#if !defined(GLIA_NO_AVX512_KERNELS)  // a build may leave them out (CMakeLists.txt)
  static const isa_kernels vnni{"avx512vnni", {}, {}};  // matmul and attend kernels
  const bool avx512vnni = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  if (avx512vnni && max_level >= isa_level::avx512vnni) {
    by_priority.push_back(
        {&vnni,
         {avx512vnni_mm_legacy(forms.q4_0_pairs, forms.amd), avx512vnni_mm_kquants(forms.amd), avx512vnni_mm_float()},
         avx512vnni_attend(),
         nullptr,
         nullptr});
  }
  static const isa_kernels amx{"avx512amx", {}, {}};  // matmul kernels (prefill)
  if (avx512vnni && f.amx_int8 && max_level >= isa_level::avx512amx)
    by_priority.push_back({&amx, {avx512amx_mm_legacy(forms.q4_0_pairs, forms.amd), avx512amx_mm_kquants(forms.amd), {}}, nullptr, nullptr, nullptr});
#endif
#elif defined(__aarch64__)  // NEON is in the base instruction set
  if (max_level >= isa_level::neon)
    by_priority.push_back({&neon_kernels(), {}, neon_attend(), neon_glu(), neon_sum_of_squares()});
#endif
  for (const candidate& c : by_priority) {
    const isa_kernels* isa = c.isa;
    if (c.attend) {
      k.attend = c.attend;
      k.attend_isa = isa->name;
      k.isa = isa->name;
    }
    if (c.glu) {
      k.glu = c.glu;
      k.glu_isa = isa->name;
      k.isa = isa->name;
    }
    if (c.sum_of_squares) k.sum_of_squares = c.sum_of_squares;
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

const kernel_table& kernels_up_to(isa_level level) {
  static const kernel_table tables[] = {resolve(isa_level::scalar), resolve(isa_level::avx2),
                                        resolve(isa_level::avx512vnni), resolve(isa_level::avx512amx),
                                        resolve(isa_level::neon)};
  return tables[int(level)];
}

const kernel_table& kernels() { return kernels_up_to(isa_level::neon); }

const kernel_table& scalar_kernels() { return kernels_up_to(isa_level::scalar); }

const void*& amx_tiles_of_thread() {
  thread_local const void* loaded = nullptr;
  return loaded;
}

}  // namespace glia::cpu
