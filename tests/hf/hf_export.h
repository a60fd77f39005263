// Writes a Hugging Face checkpoint folder holding the same model as a GGUF file of the test pack,
// in transformers' conventions (the ones llama.cpp's converter undoes: Llama Q/K rows by halves,
// Gemma norms stored as w - 1, HF tensor names, config.json keys). The checkpoint loader is then
// checked against the pack's golden logits, which llama.cpp computed from the GGUF.
#pragma once

#include <string>

#include "core/status.h"

namespace glia::test {

struct hf_export_options {
  bool multimodal = false;      // gemma3 only: Gemma3ForConditionalGeneration (text_config, prefixed names, a vision tensor)
  bool new_names = false;       // multimodal names as transformers >= 4.52 saves them (model.language_model.*)
  int shards = 1;               // > 1: model-0000k-of-0000n.safetensors and model.safetensors.index.json
  std::string tokenizer_dir{};  // copy tokenizer.json(.gz, unpacked) and tokenizer_config.json from here
  bool bf16 = false;            // matrices rounded to BF16, the dtype most checkpoints ship in
  bool bf16_vectors = false;    // norms and biases in BF16 as well
  bool v5_rope = false;         // RoPE settings in transformers 5's rope_parameters (per layer type for Gemma 3)
  std::string architecture{};   // config.json's class when not the family's usual one (MistralForCausalLM)
  std::string rope_scaling{};   // config.json's rope_scaling (JSON); the GGUF's rope_freqs tensor is left out
  std::string config_patch{};   // a JSON merge patch applied to config.json last (null values delete keys)
};

status export_hf_checkpoint(const std::string& gguf_path, const std::string& dir, const hf_export_options& opts = {});

}  // namespace glia::test
