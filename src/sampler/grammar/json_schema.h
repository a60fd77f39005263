// JSON Schema (draft 2020-12 and draft-07 keywords) to GBNF, for --json-schema and the server's
// response_format. The grammar is sound: every text it accepts is a JSON text valid under the
// schema (oneOf aside, below). What it cannot express is refused with a one-line message naming the
// keyword, its JSON pointer ("#/properties/x") and the value, never approximated.
//
// Accepted:
//  - type (a name or a list), enum, const, the empty schema and true (any JSON value); false and
//    schemas nothing satisfies are refused.
//  - Objects: properties, written in the schema's order (parse it as ordered_json), optional ones
//    skippable; required; additionalProperties true / false / a schema. When additionalProperties
//    is ABSENT beside "properties", objects carry only the listed properties (and any required
//    names not listed), as llama.cpp's converter does: still valid, and what a caller expects;
//    without "properties" any members may come. Extra members, where allowed, follow the listed
//    ones, with names that differ from theirs. minProperties / maxProperties only where the listed
//    properties already meet them.
//  - Arrays: items, prefixItems (draft-07's array "items" with additionalItems too), minItems,
//    maxItems. After prefixItems, an absent "items" generates no further items (unless minItems
//    needs them). uniqueItems: true only with maxItems <= 1.
//  - Strings: minLength / maxLength (code points); pattern (regex_gbnf.h; unanchored, as JSON
//    Schema reads it: an end without ^ / $ may have any characters beyond it); format date, time,
//    date-time, uuid (RFC 3339 as Python's jsonschema checks it; time needs its offset). Other
//    formats are annotations (2020-12's default) and ignored. pattern takes no length beside it,
//    format only lengths it already meets.
//  - integer with minimum / maximum / exclusiveMinimum / exclusiveMaximum, exact for any 64-bit
//    bounds (integers are written with at most 20 digits, 15 on a side the schema leaves open);
//    number unbounded (16 digits each side of the point, an exponent of at most 2), or between integer
//    bounds as fixed-point decimals without exponent (bounds up to 2^53, exclusive ones up to 2^32
//    with at most 6 fraction digits, so float rounding cannot reach the bound); multipleOf 1.
//  - anyOf; oneOf read as anyOf (exclusivity cannot be enforced in general: a text matching two
//    branches is accepted, the one unsound case); allOf, merged keyword by keyword
//    (json_schema_merge.h); $ref to "#", "#/$defs/...", "#/definitions/..." or any local JSON
//    pointer, recursive references becoming recursive rules; unevaluatedProperties /
//    unevaluatedItems false.
//  - Annotations (title, description, examples, default, $schema, $id, $comment, deprecated, ...)
//    and unknown keywords are ignored, as validators ignore them.
// Refused: not, if/then/else, contains, patternProperties, propertyNames, dependentRequired,
// dependentSchemas, dependencies, multipleOf other than 1, non-local $ref, a $ref cycle with no
// property or item in between, and sizes past the limits (lengths and item counts over 10000,
// nesting, rules, total grammar size).
//
// JSON text form: nothing before the value; between tokens and after the value nothing, one space,
// or a newline and up to 20 spaces/tabs (bounded, so a model cannot loop on whitespace). Strings
// take every JSON escape (\" \\ \/ \b \f \n \r \t \uXXXX, surrogates only as pairs) and never a raw
// control character. Numbers follow RFC 8259 (no leading zeros, no "+", no NaN).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"
#include "sampler/grammar/regex_gbnf.h"

namespace glia::grammar {

// Never throws; the grammar's root rule is `root`.
result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);
// nlohmann::json sorts object members: properties come out in alphabetical order.
result<std::string> json_schema_to_gbnf(const nlohmann::json& schema);

}  // namespace glia::grammar
