// JSON in and out of template values. Input keeps object key order (ordered_json), as Python's
// json.loads does. Output is Python's json.dumps byte for byte, which is what HF's `tojson` filter
// calls (ensure_ascii=False by default there).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "tokenizer/jinja/value.h"

namespace glia::jinja {

using json = nlohmann::ordered_json;

// Fails when the document nests deeper than max_depth.
result<value> from_json(const json& j, uint32_t max_depth);

struct dumps_options {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: one line; else the text of one indent level
  std::optional<std::string> item_separator;  // nullopt: Python's default, ", " (or "," with indent)
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// json.dumps(v, ...). Fails like Python on values JSON cannot hold ("Object of type Undefined is not
// JSON serializable") and on non-string keys it cannot convert. `max_bytes` bounds the output.
result<std::string> dumps(const value& v, const dumps_options& opt, size_t max_bytes);

}  // namespace glia::jinja
