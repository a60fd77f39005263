// --ids for glia logits and glia detokenize: token ids separated by commas and/or spaces, optionally
// in brackets, so that what `glia tokenize --ids-only` and llama-tokenize print ("1 2 3", "[1, 2, 3]")
// can be pasted back, or read from a file. An empty item ("1,,2"), a number out of int32 range or anything else is refused,
// naming the item.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace glia::cli {

result<std::vector<int32_t>> parse_token_ids(std::string_view text);

// The --ids argument: the ids themselves, or "@FILE" for a file holding them (long contexts pass
// the command line's 128 KiB limit on one argument).
result<std::vector<int32_t>> read_token_ids(const std::string& arg);

}  // namespace glia::cli
