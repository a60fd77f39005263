// Scales a vector to unit Euclidean length (embeddings), summing in double; a zero vector stays zero.
#pragma once

#include <cmath>
#include <span>

namespace glia {

inline void scale_to_unit_length(std::span<float> v) {
  double sum = 0.0;
  for (float x : v) sum += double(x) * double(x);
  const double norm = std::sqrt(sum);
  if (norm > 0.0)
    for (float& x : v) x = float(double(x) / norm);
}

}  // namespace glia
