#include "fixtures.h"

#include <memory>

#include "fuzz_support.h"
#include "gguf/gguf.h"

namespace glia::fuzz {
namespace {

std::unique_ptr<tokenizer> load_tokenizer(const std::string& model_rel) {
  const std::string path = testdata(model_rel);
  auto f = gguf::file::open(path);
  if (!f) setup_failed(f.message());
  auto tok = tokenizer::from_gguf(**f);
  if (!tok) setup_failed(path + ": " + tok.message());
  return std::move(*tok);  // the tokenizer copies what it needs; the mapping can go
}

}  // namespace

const tokenizer& brown_tokenizer() {
  static const std::unique_ptr<tokenizer> tok = load_tokenizer("models/brown-f32.gguf");
  return *tok;
}

}  // namespace glia::fuzz
