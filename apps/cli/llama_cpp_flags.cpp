#include "llama_cpp_flags.h"

#include <string_view>

namespace glia::cli {
namespace {

struct flag {
  std::string_view llama_cpp;  // as llama.cpp's tools spell it
  std::string_view glia;       // glia's spelling, or empty: glia has no such option
  std::string_view why;        // for those it has not: what to do instead
};

constexpr flag flags[] = {
    {"-md", "--model-draft", ""},
    {"-np", "--parallel", ""},
    {"-ub", "--ubatch", ""},
    {"-sys", "--system", ""},
    {"-ngl", "", "glia runs the whole model on one backend: --backend cuda for the GPU (no per-layer split)"},
    {"-ngld", "", "the draft model runs on the model's backend (--backend)"},
    {"-fa", "", "glia's attention always streams over the KV cache (nothing to turn on)"},
    {"-ctk", "", "the KV cache type is --kv-type (f16 or f32, for keys and values together)"},
    {"-ctv", "", "the KV cache type is --kv-type (f16 or f32, for keys and values together)"},
    {"-cnv", "", "conversations are `glia chat`"},
    {"-tb", "", "-t sets the threads of prompt processing and generation alike"},
    {"-hf", "", "glia loads local files and folders (-m PATH)"},
};

}  // namespace

status translate_llama_cpp_flags(std::vector<std::string>& args) {
  for (std::string& a : args) {
    if (a == "--") break;
    for (const flag& f : flags) {
      if (a != f.llama_cpp) continue;
      if (f.glia.empty()) return make_error("{} is llama.cpp's option, not glia's: {}", a, f.why);
      a = std::string(f.glia);
      break;
    }
  }
  return {};
}

}  // namespace glia::cli
