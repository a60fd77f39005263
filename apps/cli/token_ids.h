// --ids for glia logits and glia detokenize: token ids separated by commas and/or spaces, optionally
// in brackets, so that what `glia tokenize --ids-only` and llama-tokenize print ("1 2 3", "[1, 2, 3]")
// can be pasted back. An empty item ("1,,2"), a number out of int32 range or anything else is refused,
// naming the item.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace glia::cli {

result<std::vector<int32_t>> parse_token_ids(std::string_view text);

}  // namespace glia::cli
