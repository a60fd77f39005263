// One hostile input: how to make the file, which command meets it, and the phrase its one-line error
// must contain. The table files (gguf_cases_test.cpp, model_cases_test.cpp) list the cases; each
// runs once through the glia binary and once through the library layer that should refuse it.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "hostile_files.h"

namespace glia::test {

enum class via { info, run, logits };         // glia subcommand that opens the file
// Library step expected to refuse it; forward: the model loads and a forward pass over the ids of
// via::logits (1, 7) on the reference backend fails.
enum class layer { gguf, model, tokenizer, forward };

struct hostile_case {
  std::string name;  // [A-Za-z0-9_] (a gtest parameter name)
  std::function<bytes()> make;
  std::string expect;  // substring of the error message
  via command = via::info;
  layer refused_by = layer::gguf;
};

inline void PrintTo(const hostile_case& c, std::ostream* os) { *os << c.name; }

// Checks `c` through the glia binary: exit code 1, and stderr is exactly one line "error: ..."
// containing c.expect.
void expect_cli_refuses(const hostile_case& c);
// Checks `c` through the library: the layer c.refused_by returns an error containing c.expect and
// every layer below it accepts the file.
void expect_library_refuses(const hostile_case& c);

}  // namespace glia::test
