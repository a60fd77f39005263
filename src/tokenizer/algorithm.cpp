#include "tokenizer/algorithm.h"

#include "tokenizer/bpe.h"
#include "tokenizer/spm.h"

namespace glia::tok {

result<std::unique_ptr<algorithm>> make_algorithm(const vocab& v) {
  switch (v.kind) {
    case vocab_kind::spm: return std::unique_ptr<algorithm>(std::make_unique<spm_algorithm>(v));
    case vocab_kind::bpe: {
      auto b = bpe_algorithm::create(v);
      if (!b) return b.take_error();
      return std::unique_ptr<algorithm>(std::move(*b));
    }
  }
  return make_error("unknown vocabulary kind");
}

}  // namespace glia::tok
