// Weights bound by name from a GGUF file. Matrices stay in the file's (quantized) type and point
// into the mapping; small vectors (norms, biases, scales) are converted to float once at load.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "model/profile.h"

namespace glia {

struct layer_weights {
  std::vector<float> attn_norm;       // [n_embd]
  weight_view wq;                     // [n_head * head_dim_k, n_embd]
  weight_view wk;                     // [n_head_kv * head_dim_k, n_embd]
  weight_view wv;                     // [n_head_kv * head_dim_v, n_embd]; unset when V = K
  std::vector<float> bq, bk, bv;      // [n_out of wq/wk/wv] (qkv_bias)
  std::vector<float> q_norm, k_norm;  // [head_dim_k] (qk_norm)
  weight_view wo;                     // [n_embd, n_head * head_dim_v]
  std::vector<float> post_attn_norm;  // [n_embd]
  std::vector<float> ffn_norm;        // [n_embd]
  weight_view ffn_gate;               // [n_ff, n_embd]
  weight_view ffn_up;                 // [n_ff, n_embd]
  weight_view ffn_down;               // [n_embd, n_ff]
  std::vector<float> post_ffn_norm;   // [n_embd]
  std::optional<float> output_scale;  // layer_output_scale, when the file has it
  int64_t n_ff = 0;

  // Every matrix and every small vector of the layer (unset ones included: null data, empty), for
  // whatever walks all of them (weight preparation, the bytes a decode step reads).
  std::array<const weight_view*, 7> matrices() const { return {&wq, &wk, &wv, &wo, &ffn_gate, &ffn_up, &ffn_down}; }
  std::array<const std::vector<float>*, 9> vectors() const {
    return {&attn_norm, &bq, &bk, &bv, &q_norm, &k_norm, &post_attn_norm, &ffn_norm, &post_ffn_norm};
  }
};

struct model_weights {
  weight_view token_embd;           // [n_vocab, n_embd]
  weight_view output;               // [n_vocab, n_embd]; the token embedding when tied
  bool tied_output = false;
  std::vector<float> output_norm;   // [n_embd]
  std::vector<float> rope_freqs;    // [n_rot / 2] frequency divisors, when the file has them
  std::vector<layer_weights> layers;
};

// Binds every tensor the profile needs, checking presence, shape and type, with messages naming the
// tensor, its shape and the shape expected.
result<model_weights> bind_weights(const gguf::file& f, const family_profile& p);

}  // namespace glia
