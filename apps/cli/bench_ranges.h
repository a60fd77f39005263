// Integer lists as llama-bench takes them: each comma-separated item is N, FIRST-LAST (every value),
// FIRST-LAST+STEP or FIRST-LAST*MULT, so `-p 128-1024*2` means 128,256,512,1024.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace glia::cli::bench {

// The values of `items` in order, each within [lo, hi]; `option` names the flag in errors.
result<std::vector<int>> expand_int_list(std::string_view option, const std::vector<std::string>& items, int lo, int hi);

}  // namespace glia::cli::bench
