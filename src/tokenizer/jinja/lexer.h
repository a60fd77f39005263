// Jinja2's lexer with the settings HF renders chat templates with: trim_blocks (the newline after a
// block or comment tag is dropped), lstrip_blocks (spaces before a block or comment tag on its own
// line are dropped), `-`/`+` whitespace control on tags, comments, raw blocks, and the single
// trailing newline of the source removed (keep_trailing_newline=False). Line endings become "\n".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace glia::jinja {

enum class tok : uint8_t { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct token {
  tok type = tok::eof;
  std::string text;  // text: the data; name/op: its spelling; string: the unescaped value
  int line = 1;
  int64_t ival = 0;
  double fval = 0;
};

result<std::vector<token>> lex(std::string_view source);

}  // namespace glia::jinja
