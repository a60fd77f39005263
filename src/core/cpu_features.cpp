#include "core/cpu_features.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace glia {
namespace {

// Asks Linux for the AMX tile data state (XFEATURE_XTILEDATA, 18) for this process: without it the
// first tile instruction faults. Granted for every thread of the process.
bool amx_permitted() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
  return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
#else
  return false;
#endif
}

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
  // AVX512_VNNI: CPUID leaf 7, sub-leaf 0, ECX bit 11 (asked directly, like F16C above); AMX-TILE
  // and AMX-INT8: the same leaf, EDX bits 24 and 25.
  const bool leaf7 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx);
  f.avx512vnni = leaf7 && (ecx & (1u << 11));
  f.amx_int8 = leaf7 && (edx & (1u << 24)) && (edx & (1u << 25)) && amx_permitted();
  unsigned vendor[4] = {};
  if (__get_cpuid(0, &vendor[3], &vendor[0], &vendor[2], &vendor[1])) {  // ebx, edx, ecx spell the name
    char name[13] = {};
    std::memcpy(name, vendor, 12);
    f.amd = std::strcmp(name, "AuthenticAMD") == 0 || std::strcmp(name, "HygonGenuine") == 0;
  }
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
