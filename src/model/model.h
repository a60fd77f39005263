// A loaded model: the mapped file, its family profile and its bound weights.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gguf/gguf.h"
#include "model/profile.h"
#include "model/weights.h"

namespace glia {

struct model {
  std::shared_ptr<gguf::file> file;
  family_profile profile;
  model_weights weights;

  // Bytes of weights one decode step reads: every layer's matrices and vectors (norms, biases), the
  // final norm, the LM head, one embedding row.
  size_t decode_weight_bytes() const;
};

struct load_options {
  bool use_mmap = true;
  std::function<void(uint64_t done, uint64_t total)> progress;  // called while reading (no mmap)
};

result<std::shared_ptr<const model>> load_model(const std::string& path, const load_options& opts = {});
// The same from an already-open file (tests build files in memory).
result<std::shared_ptr<const model>> load_model(std::shared_ptr<gguf::file> file);

}  // namespace glia
