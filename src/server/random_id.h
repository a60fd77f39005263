// Ids that clients only compare (call ids, message ids): a prefix and random letters or digits.
#pragma once

#include <random>
#include <string>
#include <string_view>

namespace glia::server {

inline std::string random_id(std::string_view prefix, int n_random) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr std::string_view alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id(prefix);
  for (int i = 0; i < n_random; ++i) id += alnum[rng() % alnum.size()];
  return id;
}

}  // namespace glia::server
