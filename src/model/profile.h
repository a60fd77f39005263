// A model family is data: every behavioural switch the forward pass reads lives in family_profile,
// filled from GGUF metadata by one function per family (families/<name>.cpp). The forward never asks
// which family it runs; a new behaviour is a new field here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/status.h"

namespace glia {
namespace gguf {
class file;
}

// What differs from layer to layer (Gemma 2/3/4 interleave sliding and full attention layers, and
// Gemma 4 changes head geometry between them).
struct layer_profile {
  bool sliding = false;     // sliding-window attention
  int window = 0;           // window in tokens when sliding (0 = full attention)
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int64_t n_ff = 0;         // feed-forward width
  rope_params rope;         // freq_factors is bound from weights when use_rope_freqs
  bool use_rope_freqs = false;  // divide rotation frequencies by the rope_freqs tensor
  bool v_from_k = false;        // no attn_v tensor: V is the K projection (Gemma 4 full layers)
  float attn_scale = 1.0f;      // multiplies q.k
};

struct family_profile {
  std::string arch;  // general.architecture
  std::string name;  // general.name

  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t n_ff = 0;  // the widest layer's feed-forward width (layer_profile::n_ff has each one)
  int n_layer = 0;
  int n_ctx_train = 0;
  float norm_eps = 1e-5f;

  // Embedding and head.
  float embed_scale = 1.0f;       // Gemma multiplies embeddings by sqrt(n_embd)
  float final_softcap = 0.0f;     // cap * tanh(logit / cap) when > 0
  // Attention block.
  bool qkv_bias = false;          // Qwen2
  bool qk_norm = false;           // per-head RMSNorm of Q and K before RoPE (Qwen3, Gemma 3/4)
  bool v_norm = false;            // weightless RMSNorm of V (Gemma 4)
  bool post_attn_norm = false;    // RMSNorm of the attention output before the residual (Gemma 2/3/4)
  float attn_softcap = 0.0f;      // Gemma 2
  // FFN block.
  activation ffn_act = activation::silu;
  bool post_ffn_norm = false;     // Gemma 2/3/4
  bool layer_output_scale = false;  // Gemma 4: the residual stream is scaled after each layer

  // Q/K rows in a Hugging Face checkpoint's half-split order (a Llama folder): RoPE is NeoX-style,
  // and a GGUF written from the model interleaves them (model/rope_rows.h).
  bool qk_checkpoint_order = false;

  std::vector<layer_profile> layers;

  int max_head_dim() const;
};

// Fills a profile from the file's metadata (dispatching on general.architecture) and validates it.
result<family_profile> profile_from_gguf(const gguf::file& f);
// Names of the supported architectures.
std::vector<std::string> supported_architectures();

}  // namespace glia
