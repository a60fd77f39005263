// The CUDA entry points of a build without CUDA (GLIA_CUDA off or no nvcc found at configure time).
#include "backend/backend.h"

namespace glia {

int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() { return "this build of glia has no CUDA support (configure with nvcc present and -DGLIA_CUDA=ON)"; }
std::unique_ptr<backend> make_cuda_backend(int, bool) { return nullptr; }
cuda_device_facts cuda_describe_device(int) { return {}; }

}  // namespace glia
