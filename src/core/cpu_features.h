// What the CPU we run on can do, asked once at startup, so kernels compiled for AVX2 are only
// called where they are legal.
#pragma once

namespace glia {

struct cpu_features {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  // AVX-512 as AMD builds it (Zen 4, family 19h: each 512-bit instruction one macro-op split into
  // two 256-bit halves; Zen 5, 1Ah+: full width), with no clock penalty. Intel's AVX-512 cores
  // gang two 256-bit ports for one 512-bit instruction and may lower the clock; which kernels win
  // differs (panel_vectors.h, decode_form).
  bool avx512_amd = false;
  // An AMD core, or Hygon's (Zen-derived): some kernel forms are tuned per vendor (cpu_kernels.cpp).
  bool amd = false;
  // 512-bit instructions run at full width, as fast per instruction as 256-bit ones (AMD Zen 5 and
  // later: family 1Ah+).
  bool avx512_full_width = false;
  // AMX tiles with int8 dot products (Intel Sapphire Rapids and later), and the kernel's leave to
  // use them: Linux hands out the 8 KiB of tile state per process only on request (arch_prctl
  // ARCH_REQ_XCOMP_PERM, Linux 5.16+), which detection asks for once; false where that is refused.
  bool amx_int8 = false;
};

// Detected once (thread-safe static); all false on non-x86 builds.
const cpu_features& host_cpu_features();

inline bool has_avx2() { return host_cpu_features().avx2; }
inline bool has_fma() { return host_cpu_features().fma; }
inline bool has_f16c() { return host_cpu_features().f16c; }

}  // namespace glia
