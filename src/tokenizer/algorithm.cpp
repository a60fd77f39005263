#include "tokenizer/algorithm.h"

#include "tokenizer/spm.h"

namespace glia::tok {

std::unique_ptr<algorithm> make_algorithm(const vocab& v) {
  switch (v.kind) {
    case vocab_kind::spm: return std::make_unique<spm_algorithm>(v);
  }
  return nullptr;
}

}  // namespace glia::tok
