// llama.cpp's multi-letter single-dash options (-md, -ngl, -fa, ...). CLI11 reads "-md x" as "-m d x"
// (a short option is one letter), which would fail with a message about the wrong option, or worse
// run with a model path of "d". So before parsing, the ones glia has are spelled as its long
// options and the ones it has not are refused with what to use instead.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace glia::cli {

// Rewrites args (argv[1..]) in place. Only whole arguments are looked at, up to a "--".
status translate_llama_cpp_flags(std::vector<std::string>& args);

}  // namespace glia::cli
