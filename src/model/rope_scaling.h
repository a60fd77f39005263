// Llama 3 RoPE frequency scaling: the rope_freqs tensor llama.cpp's converter computes from a
// config.json's rope_scaling (used by the synthetic-model tool and the checkpoint loader).
#pragma once

#include <vector>

namespace glia {

// Llama 3 ("rope_type": "llama3") frequency scaling from the model's config.json.
struct llama3_rope_scaling {
  double factor = 0.0;  // 0: none
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_context = 8192;
};

// Frequency divisors for RoPE pairs i < head_dim/2 as llama.cpp's converter computes the
// rope_freqs tensor for rope_type "llama3": 1 for short wavelengths, `factor` for long ones, a
// smooth blend in between.
std::vector<float> llama3_rope_factors(const llama3_rope_scaling& s, double rope_base, int head_dim);

}  // namespace glia
