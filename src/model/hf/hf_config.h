// config.json -> the GGUF metadata llama.cpp's converter writes for the same model, and the facts
// the tensor translation needs (layer count, tying, RoPE frequency factors).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/hf/hf_family.h"

namespace glia::hf {

struct model_config {
  const family* fam = nullptr;
  json text;  // the language model's config, transformers' defaults filled in
  int64_t n_layer = 0;
  bool tied = false;                    // the LM head is the token embedding
  bool tied_given = false;              // config.json says so (else the family's default)
  std::vector<float> rope_freq_factors;  // Llama 3 RoPE scaling: the rope_freqs tensor llama.cpp adds
  gguf::writer metadata;
};

// JSON text of one of the checkpoint's files, refused past a nesting depth no real file reaches.
result<json> parse_json_file(std::string_view text, std::string_view file_name);

// `name` (the folder's) becomes general.name.
result<model_config> read_model_config(const json& config, const std::string& name);

}  // namespace glia::hf
