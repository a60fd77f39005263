#include "model/rope_scaling.h"

#include <cmath>
#include <numbers>

namespace glia {

std::vector<float> llama3_rope_factors(const llama3_rope_scaling& s, double rope_base, int head_dim) {
  // In float32, as the converter's torch code computes it.
  const float old_ctx = float(s.original_context);
  const float low_wavelen = old_ctx / float(s.low_freq_factor);
  const float high_wavelen = old_ctx / float(s.high_freq_factor);
  std::vector<float> out;
  for (int i = 0; i < head_dim; i += 2) {
    const float freq = 1.0f / std::pow(float(rope_base), float(i) / float(head_dim));
    const float wavelen = 2.0f * std::numbers::pi_v<float> / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(float(s.factor));
    } else {
      const float smooth = (old_ctx / wavelen - float(s.low_freq_factor)) / float(s.high_freq_factor - s.low_freq_factor);
      out.push_back(1.0f / ((1.0f - smooth) / float(s.factor) + smooth));
    }
  }
  return out;
}

}  // namespace glia
