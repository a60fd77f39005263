#include "model/model_file.h"

#include <filesystem>

#include "model/hf/hf_checkpoint.h"

namespace glia {

result<std::shared_ptr<gguf::file>> open_model_file(const std::string& path, bool use_mmap,
                                                    const std::function<void(uint64_t, uint64_t)>& progress) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return hf::open_checkpoint(path);
  return gguf::file::open(path, use_mmap, {}, progress);
}

}  // namespace glia
