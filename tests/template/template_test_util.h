// Shared helpers of the template tests.
#pragma once

#include <string>

#include "tokenizer/jinja/chat_template.h"
#include "tokenizer/jinja/jinja.h"
#include "test_support.h"

namespace glia::test {

// A JSON file of the test data, as template variables.
inline jinja::json load_json(const std::string& path) { return jinja::json::parse(read_text(path)); }

struct render_case {
  const char* name;
  const char* source;
  const char* expected;  // the output, or a piece of the error message
};

// The clock of the pack's goldens: 2024-07-26 12:00:00.
inline jinja::civil_time pack_clock() { return jinja::civil_time{2024, 7, 26, 12, 0, 0}; }

inline result<std::string> render_fixed_clock(const std::string& source, const jinja::json& vars,
                                              jinja::render_limits limits = {}) {
  jinja::render_options o;
  o.now = pack_clock();
  o.limits = limits;
  return jinja::render(source, vars, o);
}

}  // namespace glia::test
