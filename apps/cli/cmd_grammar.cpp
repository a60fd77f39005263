// glia grammar: what a constraint compiles to, and whether a text obeys it. Prints the GBNF that a
// JSON schema or a regular expression becomes (as llama.cpp's json_schema_to_grammar.py does), checks
// a grammar, and with --check validates a text against it (as llama-gbnf-validator does): exit 0
// for a whole sentence, 1 otherwise, with where the text leaves the grammar.
#include <fmt/core.h>

#include "commands.h"
#include "core/read_file.h"
#include "sampler/grammar/constraint.h"
#include "sampler/grammar/json_schema.h"
#include "sampler/grammar/regex_gbnf.h"

namespace glia::cli {
namespace {

struct grammar_options {
  std::string grammar, grammar_file, schema, schema_file, regex, check, check_file;
  CLI::Option *grammar_opt = nullptr, *grammar_file_opt = nullptr, *schema_opt = nullptr, *schema_file_opt = nullptr,
              *check_opt = nullptr, *check_file_opt = nullptr;
};

int fail(const std::string& msg) {
  fmt::print(stderr, "error: {}\n", msg);
  return 1;
}

// The GBNF text of whichever source was given.
result<std::string> gbnf_of(const grammar_options& o) {
  if (o.grammar_opt->count()) return o.grammar;
  if (o.grammar_file_opt->count()) return read_whole_file(o.grammar_file);
  if (o.schema_opt->count()) return grammar::json_schema_text_to_gbnf(o.schema);
  if (o.schema_file_opt->count()) {
    GLIA_ASSIGN(auto text, read_whole_file(o.schema_file));
    return grammar::json_schema_text_to_gbnf(text);
  }
  return grammar::regex_to_gbnf(o.regex);
}

std::pair<size_t, size_t> line_col(std::string_view text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else if ((uint8_t(text[i]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  return {line, col};
}

int run(const grammar_options& o) {
  auto gbnf = gbnf_of(o);
  if (!gbnf) return fail(gbnf.message());
  auto g = grammar::from_gbnf(*gbnf);
  if (!g) return fail(g.message());
  const bool checking = o.check_opt->count() || o.check_file_opt->count();
  if (!checking) {
    fmt::print("{}", *gbnf);
    if (!gbnf->empty() && gbnf->back() != '\n') fmt::print("\n");
    return 0;
  }
  std::string text = o.check;
  if (o.check_file_opt->count()) {
    auto t = read_whole_file(o.check_file);
    if (!t) return fail(t.message());
    text = std::move(*t);
  }
  const grammar::text_check c = grammar::check_text(**g, text);
  const auto [line, col] = line_col(text, c.offset);
  switch (c.result) {
    case grammar::text_check::verdict::sentence:
      fmt::print("the text is in the grammar ({} bytes)\n", text.size());
      return 0;
    case grammar::text_check::verdict::prefix:
      fmt::print("the text is incomplete: it begins a sentence of the grammar but does not finish one ({} bytes)\n", text.size());
      return 1;
    case grammar::text_check::verdict::leaves:
      fmt::print("the text leaves the grammar at byte {} (line {}, column {}): '{}'\n", c.offset, line, col,
                 one_line(text.substr(c.offset, 24)));
      return 1;
    case grammar::text_check::verdict::invalid_utf8:
      fmt::print("the text is not valid UTF-8 at byte {} (line {}, column {})\n", c.offset, line, col);
      return 1;
    case grammar::text_check::verdict::too_complex:
      fmt::print("the text goes past the matcher's bounds at byte {} (line {}, column {}): the grammar is too ambiguous or "
                 "nests too deep there\n",
                 c.offset, line, col);
      return 1;
  }
  return 1;
}

}  // namespace

command_fn add_grammar(CLI::App& app) {
  auto o = std::make_shared<grammar_options>();
  CLI::App* cmd = app.add_subcommand(
      "grammar", "print the GBNF grammar a JSON schema or regex becomes, or check a text against a constraint (--check)");
  auto* sources = cmd->add_option_group("source", "the constraint (one of)");
  o->grammar_opt = sources->add_option("--grammar", o->grammar, "a GBNF grammar (llama.cpp's notation)");
  o->grammar_file_opt = sources->add_option("--grammar-file", o->grammar_file, "a GBNF grammar file");
  o->schema_opt = sources->add_option("-j,--json-schema", o->schema, "a JSON schema");
  o->schema_file_opt = sources->add_option("--json-schema-file", o->schema_file, "a JSON schema file");
  sources->add_option("--regex", o->regex, "a regular expression the whole text must match (vLLM's guided_regex)");
  sources->require_option(1);
  o->check_opt = cmd->add_option("--check", o->check, "a text to check against the constraint (exit 0: a whole sentence)");
  o->check_file_opt = cmd->add_option("--check-file", o->check_file, "the same, the text read from a file (exact bytes)")->excludes(o->check_opt);
  return [o] { return run(*o); };
}

}  // namespace glia::cli
