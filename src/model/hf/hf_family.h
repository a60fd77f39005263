// Hugging Face model families glia reads from safetensors checkpoints, as data: which GGUF
// architecture each becomes and how its conventions differ from llama.cpp's GGUF ones (the GGUF
// files' conventions are the engine's, so a checkpoint is translated into them at load).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string_view>

#include "core/status.h"
#include "gguf/gguf.h"

namespace glia::hf {

using json = nlohmann::json;

struct family {
  std::string_view hf_arch;    // config.json "architectures"[0]
  std::string_view gguf_arch;  // general.architecture of the translation
  // Llama checkpoints rotate the two halves of each head (rotate_half); GGUF "llama" rotates adjacent
  // pairs, so llama.cpp's converter reorders the rows of Q and K. glia keeps the checkpoint's order
  // and marks it in the metadata (model/rope_rows.h); quantize reorders them when writing a GGUF.
  bool mark_qk_checkpoint_order = false;
  // Gemma checkpoints store RMSNorm weights w for a forward that multiplies by 1 + w; GGUF stores 1 + w.
  bool norm_plus_one = false;
  // Gemma 2/3 norm both sides of each block: post_attention_layernorm is the attention's post-norm
  // and pre_feedforward_layernorm the FFN's input norm (elsewhere post_attention_layernorm is that).
  bool sandwich_norms = false;
  // A multimodal wrapper: the language model's config is "text_config" and its tensors sit under a
  // prefix; the vision tower's are left out.
  bool text_config = false;
  // The activation's config key and the names that mean the one the GGUF architecture runs (Gemma's
  // MLP reads hidden_activation, the tanh-approximated GELU when absent; Gemma 1 configs also say
  // "hidden_act": "gelu", which it ignores).
  std::string_view activation_key = "hidden_act";
  std::span<const std::string_view> activations;
  bool qkv_bias = false;          // Q/K/V projections have biases (Qwen2)
  bool softcaps = false;          // attention and final logit softcapping (Gemma 2)
  bool local_rope_base = false;   // sliding-window layers have their own RoPE base (Gemma 3)
  // transformers' config-class defaults for the keys a checkpoint may leave out (Gemma 3's
  // text_config leaves out most), as JSON.
  std::string_view defaults;
  // What the family adds to the metadata beyond the common keys (softcaps, sliding windows).
  status (*extra)(const json& cfg, std::string_view arch, gguf::writer& md) = nullptr;
};

// Errors name the architectures config.json gave and the supported ones.
result<const family*> find_family(const json& config);

}  // namespace glia::hf
