// Reduces a JSON Schema to plain alternatives: $ref, allOf, anyOf and oneOf are resolved, and each
// alternative is one conjunction of keywords the generator reads directly. allOf merges its parts
// keyword by keyword (types intersected, bounds tightened, properties and items combined); anyOf and
// oneOf become alternatives, each merged with the keywords beside them (A and (B or C) = (A and B)
// or (A and C)). oneOf is read as anyOf: exclusivity cannot be enforced in general, so a text
// matching two branches is accepted.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/status.h"

namespace glia::grammar {

using ojson = nlohmann::ordered_json;

// One alternative: an object holding only these keywords, normalised: type (array of names), enum
// (array; const becomes a one-value enum), properties, required, additionalProperties, prefixItems,
// items (a schema; draft-07's array form becomes prefixItems), minItems, maxItems, uniqueItems (true
// only), minLength, maxLength, pattern, format (supported ones only), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum (numbers; draft-04's booleans folded in), minProperties,
// maxProperties. Sub-schemas (property values, items) are left as written.
struct flat_schema {
  ojson keywords;
  std::string path;  // JSON pointer of the schema it came from, for messages
};

// "#/properties/a~1b" style location for messages ("#" for the root).
std::string schema_location(const std::string& path);
std::string json_pointer_escape(std::string_view key);
// A value for a message: compact JSON, cut short.
std::string brief_json(const ojson& value);
// A JSON number, exactly where long double holds every int64, uint64 and double (x86-64's 64-bit
// significand, aarch64's quad precision).
long double json_number_value(const ojson& number);
// An integer, or a float with an integral value (Python's jsonschema takes 1.0 as an integer).
bool json_number_is_integral(const ojson& number);

class schema_flattener {
 public:
  explicit schema_flattener(const ojson& root) : root_(root) {}

  // The alternatives whose union `schema` accepts; none when nothing satisfies it. Refuses keywords
  // that constrain values in ways the generator cannot express.
  result<std::vector<flat_schema>> flatten(const ojson& schema, const std::string& path);

  // A local reference ("#", "#/$defs/x", any JSON pointer with ~0 ~1 and %XX escapes) and its path.
  result<std::pair<const ojson*, std::string>> resolve(const std::string& ref, const std::string& path) const;

 private:
  result<std::vector<flat_schema>> flatten_at(const ojson& schema, const std::string& path, int depth);

  const ojson& root_;
  std::vector<const ojson*> expanding_;  // $ref targets being expanded, to catch reference cycles
};

// The conjunction of two schemas as written (sub-schemas), simplified: true parts dropped, nested
// allOf lists spliced, duplicates removed.
ojson all_of(const std::vector<ojson>& parts);

}  // namespace glia::grammar
