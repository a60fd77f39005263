// glia: run Llama-family models locally, from GGUF files or Hugging Face checkpoint folders.
#include <fmt/core.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"
#include "decimal_numbers.h"
#include "llama_cpp_flags.h"

namespace {

// stdio reports a failed write to standard output (a full disk, a closed descriptor) only through
// ferror or the final flush, after the command has returned: `glia bench --json > results.json`
// on a full disk must not exit 0 with a truncated file, as the tools writing named files do not.
// Messages here use stdio, not fmt::print, which throws when stderr cannot be written either
// (`> /dev/full 2>&1`): thrown from main's handlers, that would abort.
void report(const std::string& message) { std::fprintf(stderr, "error: %s\n", message.c_str()); }

// errno is known only when the final flush is what failed; a streaming command's earlier flushes,
// or fmt::print of a larger text, leave ferror set instead. A reader that went away (`| head`,
// with SIGPIPE ignored by the parent) is not worth a message; the status still says it.
int stdout_failed(int rc, int err) {
  if (err != EPIPE) report(std::string("writing the standard output failed") + (err ? std::string(": ") + std::strerror(err) : std::string()));
  return rc != 0 ? rc : 1;
}

int with_output_checked(int rc) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout)) return rc;
  return stdout_failed(rc, flushed ? 0 : errno);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"glia: run Llama-family language models locally (GGUF files or Hugging Face checkpoint folders)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "glia 0.1.0");
  // As in llama.cpp, an option given twice takes its last value (scripts append overrides). Options
  // that collect values (--stop, -l, --var, --cors-origin) must say take_all(): a vector option
  // limited by expected() would otherwise keep only its last occurrence.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::map<CLI::App*, glia::cli::command_fn> commands;
  auto add = [&](glia::cli::command_fn (*reg)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    auto fn = reg(app);
    commands[app.get_subcommands({})[before]] = std::move(fn);
  };
  add(glia::cli::add_run);
  add(glia::cli::add_chat);
  add(glia::cli::add_logits);
  add(glia::cli::add_embed);
  add(glia::cli::add_perplexity);
  add(glia::cli::add_info);
  add(glia::cli::add_template);
  add(glia::cli::add_grammar);
  add(glia::cli::add_bench);
  add(glia::cli::add_quantize);
  add(glia::cli::add_synth);
  add(glia::cli::add_tokenize);
  add(glia::cli::add_detokenize);
  add(glia::cli::add_serve);
  glia::cli::make_numbers_decimal(app);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (glia::status t = glia::cli::translate_llama_cpp_flags(app, args); !t) {
    fmt::print(stderr, "error: {}\n", t.message());
    return 1;
  }
  std::vector<char*> translated{argv[0]};
  for (std::string& a : args) translated.push_back(a.data());
  try {
    app.parse(int(translated.size()), translated.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Errors are values; an exception reaching here is a bug or memory running out. Caught, it
  // unwinds, so that destructors clean up (a tool's partial output file) before the exit.
  try {
    for (auto& [sub, fn] : commands)
      if (sub->parsed()) return with_output_checked(fn());
  } catch (const std::bad_alloc&) {
    report("out of memory");
  } catch (const std::system_error& e) {
    // fmt::print's failed write to standard output (more than stdio's buffer at once).
    if (std::ferror(stdout)) return stdout_failed(1, e.code().value());
    report(e.what());
  } catch (const std::exception& e) {
    report(e.what());
  }
  return 1;
}
