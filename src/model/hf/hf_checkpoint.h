// A Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer.json, tokenizer_config.json)
// opened as the GGUF file llama.cpp's converter would have written from it: the same metadata keys
// and tensor names, with Q/K rows reordered for Llama-style checkpoints and Gemma's norms shifted by
// one. Weights stay in the mapped safetensors files except those two kinds of tensors (and 1-D
// tensors, converted to F32 as the converter does). The tokenizer files travel as raw text under
// tokenizer.huggingface.{json,config,chat_template}; the tokenizer layer reads them from there.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "gguf/gguf.h"

namespace glia::hf {

// True for a folder that holds a config.json (what open_checkpoint reads).
bool is_checkpoint_dir(const std::string& path);

// Errors start with the folder's path and name the file and key or tensor at fault.
result<std::shared_ptr<gguf::file>> open_checkpoint(const std::string& dir);

}  // namespace glia::hf
