#include "backend/backend.h"

namespace glia {

result<std::unique_ptr<backend>> make_backend(const std::string& name, int n_threads, bool repack_weights,
                                              const std::string& cpu_isa) {
  if (name == "cpu" || (name == "auto" && cpu_isa != "best")) return make_cpu_backend(n_threads, repack_weights, cpu_isa);
  if (cpu_isa != "best" && (name == "ref" || name == "cuda"))
    return make_error("a CPU instruction set ({}) was asked for, but the backend is {}", cpu_isa, name);
  if (name == "ref") return make_ref_backend();
  if (name == "auto") {
    if (cuda_device_count() > 0)
      if (auto b = make_cuda_backend(0, repack_weights)) return b;
    return make_cpu_backend(n_threads, repack_weights);
  }
  if (name == "cuda") {
    if (std::string why = cuda_unavailable_reason(); !why.empty()) return make_error("CUDA backend requested, but {}", why);
    return make_cuda_backend(0, repack_weights);
  }
  return make_error("unknown backend '{}' (auto, cpu, cuda, ref)", name);
}

}  // namespace glia
