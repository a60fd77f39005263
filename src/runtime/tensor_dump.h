// --dump-tensors: writes the forward pass's named intermediates (e.g. "blk.3.attn_norm") whose
// names match a glob pattern as raw float32 files plus a JSON index, and prints statistics (abs max,
// rms, NaN count) per tensor. It hangs on the forward's single tap; nothing else in the forward
// knows about it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/forward.h"

namespace glia {

class tensor_dumper {
 public:
  // pattern: shell glob over names (`*`, `?`, `[...]`), or several separated by commas.
  tensor_dumper(std::string pattern, std::string dir, int n_positions);

  tensor_tap tap();
  // Writes the files and the index (DIR/index.json) and returns the per-tensor statistics text.
  result<std::string> finish();

  static std::string full_name(const char* name, int layer);  // "blk.3.attn_norm" or "logits"

 private:
  struct captured {
    int layer = -1;
    int64_t n_cols = 0;
    std::vector<int32_t> positions;
    std::vector<float> data;  // [positions, n_cols]
  };
  bool matches(const std::string& name) const;

  std::vector<std::string> patterns_;
  std::string dir_;
  int n_positions_;
  std::map<std::string, captured> tensors_;
  std::vector<std::string> order_;
  std::vector<std::string> seen_;  // names that did not match (layer 0 and outside the layers)
};

}  // namespace glia
