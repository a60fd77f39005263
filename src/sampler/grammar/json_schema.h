// JSON Schema (draft 2020-12 and draft-07 keywords) to GBNF, for --json-schema and the server's
// response_format. The grammar is sound: every text it accepts is a JSON text valid under the
// schema. What cannot be expressed is refused with a one-line message naming the keyword, its JSON
// pointer ("#/properties/x") and the value, never approximated.
//
// Accepted:
//  - type (a name or a list), enum, const, the empty schema / true (any JSON value); false refused.
//  - Objects: properties (written in the schema's order, optional ones skippable), required,
//    additionalProperties true / false / a schema. When additionalProperties is ABSENT and properties
//    is present, objects carry only the listed properties (and required names not listed), as
//    llama.cpp does: still valid, and what a caller expects. Extra properties, where allowed, come
//    after the listed ones with names that differ from theirs. minProperties / maxProperties only
//    where the listed properties already satisfy them.
//  - Arrays: items, prefixItems (draft-07's array "items" and additionalItems too), minItems,
//    maxItems. After prefixItems with no "items" no further items are generated (unless minItems
//    needs them). uniqueItems: true only with maxItems <= 1.
//  - Strings: minLength / maxLength (code points), pattern (regex_gbnf.h; not anchored, as JSON
//    Schema reads it), format date, time, date-time, uuid (RFC 3339 / Python jsonschema rules);
//    other formats are annotations (2020-12's default) and ignored. pattern, format and a length
//    cannot be combined.
//  - integer with minimum / maximum / exclusiveMinimum / exclusiveMaximum (any 64-bit bounds;
//    integers are written with at most 20 digits); number unbounded, or with integer-valued bounds
//    (then fixed-point decimals without exponent; bounds up to 2^53, exclusive ones up to 2^32 with
//    at most 6 fraction digits, so no float rounding reaches the bound); multipleOf 1 only.
//  - anyOf, oneOf (as anyOf: exclusivity cannot be enforced in general, so a text matching two
//    branches is accepted), allOf (merged: see json_schema_merge.h), $ref to "#", "#/$defs/...",
//    "#/definitions/..." or any local JSON pointer; recursive references become recursive rules.
//    unevaluatedProperties / unevaluatedItems: false (no properties / items beyond the merged ones).
//  - Annotations (title, description, examples, default, $schema, $id, $comment, deprecated, ...)
//    and unknown keywords are ignored, as validators ignore them.
// Refused: not, if/then/else, contains, patternProperties, propertyNames, dependent*, dependencies,
// multipleOf other than 1, non-local $ref, and sizes past the limits (nesting, counts, rules).
//
// JSON text form: no whitespace before the value; between tokens and after the value nothing, one
// space, or a newline and up to 20 spaces/tabs (bounded, so a model cannot loop on whitespace).
// Strings may use every JSON escape (\" \\ \/ \b \f \n \r \t \uXXXX, surrogates only as pairs); raw
// control characters never appear. Numbers follow RFC 8259: no leading zeros, no "+", no NaN.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/status.h"
#include "sampler/grammar/regex_gbnf.h"

namespace glia::grammar {

// A schema parsed with ordered_json keeps its properties' order, which the grammar follows.
result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// nlohmann::json sorts object members: properties come out in alphabetical order.
result<std::string> json_schema_to_gbnf(const nlohmann::json& schema);
// Schema text (parsed keeping member order); a parse error is returned as an error.
result<std::string> json_schema_text_to_gbnf(std::string_view schema_text);

}  // namespace glia::grammar
