#include "model/model_file.h"

#include <filesystem>

#include "model/hf/hf_checkpoint.h"

namespace glia {

namespace {

result<std::shared_ptr<gguf::file>> open_path(const std::string& path, bool use_mmap,
                                              const std::function<void(uint64_t, uint64_t)>& progress, bool metadata_only) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(path, ec) || p.filename() == "config.json") return hf::open_checkpoint(path, use_mmap, metadata_only);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const auto ext = p.extension();
  if ((ext == ".safetensors" || ext == ".json" || ext == ".jinja") && fs::is_regular_file(dir / "config.json", ec))
    return make_error("{}: one file of a Hugging Face checkpoint; give its folder, {}", path, dir.string());
  if (ext == ".safetensors")
    return make_error("{}: a safetensors file; glia reads a Hugging Face checkpoint as its folder (with config.json)", path);
  return gguf::file::open(path, use_mmap, {}, progress);
}

}  // namespace

result<std::shared_ptr<gguf::file>> open_model_file(const std::string& path, bool use_mmap,
                                                    const std::function<void(uint64_t, uint64_t)>& progress) {
  return open_path(path, use_mmap, progress, false);
}

std::string tokenizer_folder(const std::string& path) {
  auto folder = hf::checkpoint_folder(path);
  return folder ? *folder : path;
}

result<std::shared_ptr<gguf::file>> open_model_metadata(const std::string& path) { return open_path(path, true, {}, true); }

}  // namespace glia
