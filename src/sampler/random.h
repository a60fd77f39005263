// Seeded randomness for the sampler, spelled out so a seed gives the same tokens with any standard
// library: std::mt19937_64's output sequence is fixed by the C++ standard, but the algorithms behind
// std::uniform_real_distribution are not.
#pragma once

#include <cstdint>
#include <random>

namespace glia {

// Uniform double in [0, 1) from the top 53 bits of one 64-bit draw.
inline double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

// SplitMix64 finaliser (Steele, Lea & Flood 2014): derives independent-looking seeds for the stages
// that each own a generator, so that e.g. XTC's coin flip is not the same number as the final draw.
inline uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace glia
