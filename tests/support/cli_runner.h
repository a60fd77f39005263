// Runs the built glia binary without a shell (arguments are passed as they are, so a 100k-character
// prompt or a path with quotes needs no escaping) and captures its exit code, stdout and stderr.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace glia::test {

struct cli_result {
  int exit_code = -1;  // -1: killed by a signal (a crash), or could not start
  int signal = 0;
  std::string out;
  std::string err;
};

// stdin_text: what the program reads on standard input (else /dev/null).
cli_result run_glia(const std::vector<std::string>& args, const std::optional<std::string>& stdin_text = std::nullopt);

// The same through the shell, for tests that write pipelines or redirections: `args` is a shell
// command line after the program name (quote paths with quote()). exit_code -1: no normal exit.
cli_result run_cli(const std::string& args);
// `s` as one single-quoted shell word.
std::string quote(const std::string& s);

// The lines of `text` without the trailing newline; empty lines are kept.
std::vector<std::string> lines_of(const std::string& text);

}  // namespace glia::test
