// CLI11 reads integers with strtoll's base 0: "010" is 8 and "0x10" 16, and an empty string is 0 for
// a floating-point option. Scripts pass zero-padded numbers ("printf %03d") and empty variables
// ("--temp $TEMP"), so every numeric option reads plain decimal and refuses an empty value.
#pragma once

#include <CLI/CLI.hpp>

namespace glia::cli {

// For every INT/UINT/FLOAT option of `app` and its subcommands, added after they are all defined
// (it runs before their own checks).
void make_numbers_decimal(CLI::App& app);

}  // namespace glia::cli
