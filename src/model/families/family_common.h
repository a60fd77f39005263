// Helpers every family file uses: typed access to "<arch>.<key>" metadata (scalars or per-layer
// arrays) and the hyperparameters all Llama-like families share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/profile.h"

namespace glia::families {

class arch_metadata {
 public:
  arch_metadata(const gguf::file& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  const gguf::file& file() const { return f_; }
  std::string key(const std::string& k) const { return arch_ + "." + k; }
  bool has(const std::string& k) const { return f_.find(key(k)) != nullptr; }

  result<int64_t> get_int(const std::string& k) const;  // required
  result<int64_t> get_int(const std::string& k, int64_t fallback) const;
  result<double> get_float(const std::string& k, double fallback) const;
  result<std::string> get_string(const std::string& k, std::string fallback) const;
  // A value that is either one integer for all layers or an array of n_layer integers.
  result<std::vector<int64_t>> get_per_layer_int(const std::string& k, int n_layer, std::optional<int64_t> fallback) const;
  // A per-layer boolean array (e.g. sliding_window_pattern), or nullopt when absent.
  result<std::optional<std::vector<bool>>> get_per_layer_bool(const std::string& k, int n_layer) const;

 private:
  const gguf::file& f_;
  std::string arch_;
};

// Reads what every family shares (sizes, heads, eps, RoPE base and dims, RoPE scaling) into p and
// p.layers (full attention everywhere, normal RoPE style).
status read_common(const arch_metadata& md, family_profile& p);

// Gemma-style alternation: returns per-layer "sliding" flags from <arch>.attention.sliding_window_pattern
// when present (array of bools or an integer period), else from `default_period` (layer il is sliding
// iff il % period < period - 1; period 0 = no sliding layers).
result<std::vector<bool>> sliding_layers(const arch_metadata& md, int n_layer, int default_period);

}  // namespace glia::families
