// CLI11 (2.1) reads integers with strtoll's base 0 ("010" is 8, "0x10" 16), unsigned ones with
// strtoull (which wraps "-5" around), and an empty value as 0. Scripts pass zero-padded numbers
// ("printf %03d") and empty variables ("--temp $TEMP"), so numeric options take decimal only (inf
// and nan are left to each option's own range check) and refuse an empty value.
#pragma once

#include <CLI/CLI.hpp>

namespace glia::cli {

// For every INT/UINT/FLOAT option of `app` and its subcommands, added after they are all defined
// (it runs before their own checks).
void make_numbers_decimal(CLI::App& app);

}  // namespace glia::cli
