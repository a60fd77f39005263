// A Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer.json, tokenizer_config.json)
// opened as the GGUF file llama.cpp's converter would have written from it: the same metadata keys
// and tensor names, Gemma's norms shifted by one. Llama-style Q/K rows stay in the checkpoint's
// order, marked as such (model/rope_rows.h). Weights stay in the mapped safetensors files but for
// 1-D tensors, converted to F32 as the converter does. The tokenizer files travel as raw text under
// tokenizer.huggingface.{json,config,chat_template}; the tokenizer layer reads them from there.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "gguf/gguf.h"
#include "model/hf/hf_family.h"
#include "safetensors/safetensors.h"

namespace glia::hf {

// A checkpoint's files as read from its folder; translate() works on these alone (tests build them in
// memory).
struct checkpoint_files {
  std::string name;         // general.name: the folder's name (org/name in the Hugging Face cache)
  std::string config_json;
  std::vector<std::pair<std::string, std::shared_ptr<const safetensors::file>>> shards;  // file name, file
  json weight_map;          // model.safetensors.index.json's, or null
  // tokenizer.json, tokenizer_config.json, chat_template.jinja/.json, generation_config.json: file name, text
  std::vector<std::pair<std::string, std::string>> texts;
  std::vector<std::shared_ptr<const std::string>> buffers;  // shard bytes read into memory (no mmap)
};

// Errors name the file and the key or tensor at fault. metadata_only leaves out the tensors that would
// be converted (Q/K rows, vectors): enough for the tokenizer and chat template, not for a model.
result<std::shared_ptr<gguf::file>> translate(const checkpoint_files& files, bool metadata_only = false);

// The checkpoint folder `path` stands for: itself when it holds config.json, the folder of a
// config.json, or the snapshot a Hugging Face cache repository folder (models--org--name) uses
// (refs/main's, else its only one). Errors say what the folder is instead (a PEFT adapter, ...).
result<std::string> checkpoint_folder(const std::string& path);

// Errors start with the folder's path and name the file and key or tensor at fault. use_mmap false
// reads the weights into memory (network file systems). A Hugging Face cache repository folder
// (models--org--name) opens the revision refs/main names.
result<std::shared_ptr<gguf::file>> open_checkpoint(const std::string& path, bool use_mmap = true,
                                                    bool metadata_only = false);

}  // namespace glia::hf
