// A Jinja2 (3.1) interpreter for chat templates, in the environment Hugging Face renders them with:
// an immutable sandbox, trim_blocks and lstrip_blocks, the loopcontrols extension, a
// `{% generation %}` block, and filters/tests/methods as Jinja2 and Python define them. Errors are
// values; a template cannot hang or exhaust memory (see render_limits).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/jinja/json_io.h"

namespace glia::jinja {

struct program;

// Budgets that bound a render. The defaults fit every real chat template many times over.
struct render_limits {
  uint64_t max_steps = 5'000'000;          // expression/statement evaluations and items handled by filters
  int max_call_depth = 200;                // nested macro calls (Python stops recursion near here too)
  int max_nesting = 2000;                  // nested evaluation overall (guards the C++ stack)
  size_t max_output_bytes = size_t(64) << 20;  // the output, and any one string a template builds
  size_t max_template_bytes = size_t(4) << 20;
  int max_parse_depth = 256;               // nesting of the template's syntax
  uint32_t max_value_depth = 256;          // nesting of lists/dicts (inputs and built values)
};

struct civil_time {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
};

struct render_options {
  render_limits limits;
  std::optional<civil_time> now;  // what strftime_now sees; nullopt: the local clock
};

// A parsed template; immutable, so one may be rendered by several threads at once.
class compiled_template {
 public:
  static result<compiled_template> compile(std::string_view source, const render_limits& limits = {});
  // `variables` must be a JSON object; its members become the template's variables (on top of the
  // globals range, namespace, dict, raise_exception and strftime_now).
  result<std::string> render(const json& variables, const render_options& options = {}) const;

 private:
  std::shared_ptr<const program> prog_;
};

// Compiles and renders in one call.
result<std::string> render(std::string_view source, const json& variables, const render_options& options = {});

}  // namespace glia::jinja
