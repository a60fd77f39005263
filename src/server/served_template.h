// A chat template as the server uses it: the template, and what the server reads from its source
// (whether it shows tools, the syntax it writes calls in, the tags it reasons between), once, when
// the server starts, not on every request.
#pragma once

#include <optional>

#include "glia/session.h"
#include "server/reasoning_split.h"
#include "server/tool_calls.h"

namespace glia::server {

struct served_template {
  session::chat_format format;
  bool reads_tools = false;
  tool_syntax syntax = tool_syntax::none;
  std::optional<reasoning_tags> reasoning;

  served_template() = default;
  explicit served_template(session::chat_format f)
      : format(std::move(f)),
        reads_tools(template_reads_tools(format.source)),
        syntax(tool_syntax_of(format.source)),
        reasoning(reasoning_tags_of(format.source)) {}
};

}  // namespace glia::server
