#include "core/cpu_features.h"

namespace glia {
namespace {

cpu_features detect() {
  cpu_features f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = __builtin_cpu_supports("f16c");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
#endif
  return f;
}

}  // namespace

const cpu_features& host_cpu_features() {
  static const cpu_features features = detect();
  return features;
}

}  // namespace glia
