// The one way a model path is opened: a GGUF file, or a Hugging Face checkpoint folder translated
// into the GGUF a converter would write (model/hf/). Everything that takes -m goes through here.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "gguf/gguf.h"

namespace glia {

// progress applies to GGUF files read without mmap.
result<std::shared_ptr<gguf::file>> open_model_file(const std::string& path, bool use_mmap = true,
                                                    const std::function<void(uint64_t, uint64_t)>& progress = {});
// A Hugging Face tokenizer folder given as a checkpoint path (a cache repository folder, a config.json):
// the folder itself; any other path as it is.
std::string tokenizer_folder(const std::string& path);

// The metadata (tokenizer, chat template) without the work a checkpoint's weights need at load.
result<std::shared_ptr<gguf::file>> open_model_metadata(const std::string& path);

}  // namespace glia
