// Hugging Face tensor names -> GGUF tensor names (llama.cpp's, which the weight binder reads).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gguf/gguf.h"
#include "model/hf/hf_family.h"

namespace glia::hf {

enum class name_kind { weight, skipped };

struct mapped_name {
  name_kind kind = name_kind::weight;
  std::string gguf;  // weights only
  int64_t layer = -1;  // model.layers.<layer>.*; -1 for the others
};

// nullopt: a name this family's checkpoints should not have (the caller refuses the checkpoint).
// Skipped: tensors that carry nothing the forward needs (rotary inv_freq buffers, a multimodal
// model's vision tower and projector).
std::optional<mapped_name> map_tensor_name(std::string_view hf_name, const family& fam);

// The other way, for messages: the transformers name of a GGUF tensor name of the GGUF architecture
// `gguf_arch` (the text model's name for multimodal checkpoints); empty when there is none.
std::string checkpoint_tensor_name(std::string_view gguf_name, std::string_view gguf_arch);

// For a message about a translated checkpoint `f` that names a GGUF tensor: " (NAME is the
// checkpoint's HF_NAME...)", saying which of the checkpoint's tensors that is; empty for a GGUF file.
std::string in_checkpoint_terms(const std::string& message, const gguf::file& f);

}  // namespace glia::hf
