// llama.cpp's multi-letter single-dash options (-md, -ngl, -fa, ...). CLI11 reads "-md x" as "-m d x"
// (a short option is one letter), which would fail with a message about the wrong option, or worse
// run with a model path of "d". So before parsing, the ones glia has are spelled as its long
// options and the ones it has not are refused with what to use instead. Only arguments in an
// option's place count: the value of -p or --stop ("-p -md") is left as typed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace glia::cli {

// Rewrites args (argv[1..]) in place. Only whole arguments are looked at, up to a "--"; `app` (with
// its subcommands) tells which arguments are the values of the options before them.
status translate_llama_cpp_flags(const CLI::App& app, std::vector<std::string>& args);

}  // namespace glia::cli
