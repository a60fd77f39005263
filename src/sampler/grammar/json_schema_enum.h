// enum and const: which listed values also meet the keywords beside them, and each value's exact
// JSON spelling as GBNF.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sampler/grammar/json_schema_merge.h"

namespace glia::grammar {

// Whether `value` has one of `types` (all when empty) and meets the lengths and bounds in
// `keywords`. Keywords it cannot check (pattern, format, object and array keywords) are refused
// when they apply to the value's type.
result<bool> enum_value_allowed(const ojson& keywords, const std::vector<std::string>& types, const ojson& value,
                                const std::string& path);

// The value's JSON text as written by json.dumps / nlohmann's dump, with `space_rule` between the
// tokens of arrays and objects.
result<std::string> json_literal_expr(const ojson& value, const std::string& space_rule, const std::string& path);

}  // namespace glia::grammar
