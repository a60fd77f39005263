// Jinja2's grammar (operator precedence, `is` tests and filters binding tighter than arithmetic,
// statements) over the lexer's tokens. Tags that need a template loader (extends, include, import,
// block) are reported as unsupported, with their line.
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/jinja/ast.h"

namespace glia::jinja {

// max_depth bounds the nesting of expressions and statements (the parser is recursive).
result<std::shared_ptr<const program>> parse(std::string_view source, int max_depth);

}  // namespace glia::jinja
