// Filter tables and the helpers filters share. Internal to the jinja folder.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja/interp.h"

namespace glia::jinja {

using filter_fn = result<value> (*)(interpreter&, const value&, call_args&);

const std::map<std::string, filter_fn, std::less<>>& sequence_filters();  // filters.cpp
const std::map<std::string, filter_fn, std::less<>>& text_filters();      // filters_text.cpp
bool has_filter(const std::string& name);

namespace filters {

// Jinja's make_attrgetter: "a.b.0" looks up a, then b, then item 0 (each with getitem rules);
// with a default, an undefined step yields the default.
struct attr_getter {
  std::vector<value> parts;
  std::optional<value> dflt;
  result<value> operator()(const value& item) const;
};
result<attr_getter> make_attr_getter(const value* attribute, const value* dflt);

// Jinja's ignore_case: strings compare lower-cased unless case_sensitive.
value lower_key(const value& v);
// Stable sort of `order` (indexes into keys) by Python's < on the keys.
status sort_values(std::vector<value>& keys, std::vector<size_t>& order, bool reverse);

}  // namespace filters
}  // namespace glia::jinja
