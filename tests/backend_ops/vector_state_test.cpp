// The CPU backend hands the calling thread back with clean upper vector state (XINUSE shows no
// dirty YMM/ZMM upper halves). Left dirty, legacy-SSE code after it (the baseline-compiled engine and
// its calls into libm's VEX-encoded fmaf/expf) pays a state transition per switch: a scalar fmaf loop
// ran 55x slower on an Emerald Rapids VM, the reference backend's golden test 35x. GCC inserts the
// VZEROUPPER that prevents it only at -O2 and above (or with -fexpensive-optimizations), so this test
// fails in a build that compiles the kernels at -O1 without that flag, as the sanitizer build once did.
#include <gtest/gtest.h>

#include <cstdint>

#include "backend/backend.h"
#include "core/cpu_features.h"
#include "op_cases.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace glia::test {
namespace {

#if defined(__x86_64__)
// XGETBV with ECX = 1 reads XINUSE where CPUID leaf 0xD, sub-leaf 1 says it can (EAX bit 2); AVX2
// enabled by the OS (host_cpu_features) also means XSAVE is, so the instruction exists.
bool xinuse_readable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return has_avx2() && __get_cpuid_count(0xD, 1, &a, &b, &c, &d) && (a & (1u << 2));
}
uint64_t xinuse() {
  uint32_t lo, hi;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return uint64_t(hi) << 32 | lo;
}
// Bit 2: the upper halves of YMM0-15; bit 6: the upper 256 bits of ZMM0-15 (what VZEROUPPER clears).
constexpr uint64_t dirty_upper = (1u << 2) | (1u << 6);

void clear_upper() {
  asm volatile("vzeroupper" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
               "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

TEST(cpu_vector_state, every_op_returns_with_clean_upper_state) {
  if (!xinuse_readable()) GTEST_SKIP() << "this CPU cannot report XINUSE";
  // The probe itself: a 256-bit write sets the state, VZEROUPPER clears it. XINUSE may report state
  // as in use that is not (the architecture allows it): then the probe says nothing, and skips.
  asm volatile("vpcmpeqd %%ymm1, %%ymm1, %%ymm1" ::: "xmm1");
  const bool set = xinuse() & dirty_upper;
  clear_upper();
  if (!set || (xinuse() & dirty_upper)) GTEST_SKIP() << "XINUSE does not follow VZEROUPPER on this CPU";
  const auto cpu = make_cpu_backend(1);  // the calling thread runs every kernel
  for (const op_case& c : all_op_cases()) {
    c.run(*cpu);
    EXPECT_EQ(xinuse() & dirty_upper, 0u) << c.name;
    clear_upper();  // one finding per op that leaves it dirty, not every op after it
  }
}
#endif

}  // namespace
}  // namespace glia::test
