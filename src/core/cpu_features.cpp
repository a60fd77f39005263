#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace glia {
namespace {

cpu_features detect() {
  cpu_features f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  // F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not know "f16c",
  // and the fuzz build (fuzz/README.md) needs clang.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  // AVX512_VNNI: CPUID leaf 7, sub-leaf 0, ECX bit 11 (asked directly, like F16C above).
  f.avx512vnni = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 11));
  // Family = base family (leaf 1, EAX bits 8-11) + extended family (bits 20-27) when the base is Fh.
  if (f.avx512f && __builtin_cpu_is("amd") && __get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    const unsigned base = (eax >> 8) & 0xF, family = base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
    f.avx512_amd = family >= 0x19;
    f.avx512_full_width = family >= 0x1A;
  }
#endif
  return f;
}

}  // namespace

const cpu_features& host_cpu_features() {
  static const cpu_features features = detect();
  return features;
}

}  // namespace glia
