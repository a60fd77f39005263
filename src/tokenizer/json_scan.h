// A small, strict JSON scanner for the two large members of a tokenizer.json ("model.vocab": an object
// of text -> id, "model.merges": an array of "a b" strings or ["a", "b"] pairs, together 90% of a
// 33 MB file). nlohmann::json parses the rest; its DOM for these members alone takes seconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace glia::tok::json_scan {

struct span {
  size_t begin = 0, end = 0;  // [begin, end) of a value in the document
};

// Skips whitespace and one complete value starting at `pos`, leaving `pos` after it.
status skip_value(std::string_view doc, size_t& pos);

// Reads the string starting at doc[pos] ('"'), decoding escapes (\uXXXX with surrogate pairs) to UTF-8.
status read_string(std::string_view doc, size_t& pos, std::string& out);

// The values of members `keys` of the object whose '{' is at or after `obj` (whitespace skipped), in
// one pass; out[i] stays nullopt when there is no such member. Errors when the text there is not a
// well-formed object.
status find_members(std::string_view doc, size_t obj, std::span<const std::string_view> keys,
                    std::span<std::optional<span>> out);

// Calls f(text, id) for each member of the object at doc[s]; ids must be integers.
status for_each_text_id(std::string_view doc, span s, const std::function<status(std::string&&, int64_t)>& f);

// Calls f(index, left, right) for each merge of the array at doc[s].
status for_each_merge(std::string_view doc, span s,
                      const std::function<status(size_t, std::string&&, std::string&&)>& f);

}  // namespace glia::tok::json_scan
