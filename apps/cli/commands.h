// Subcommands of the glia binary. Each registers its options on the CLI11 app and returns the
// function to run once parsing succeeded (returning the process exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace glia::cli {

using command_fn = std::function<int()>;

command_fn add_run(CLI::App& app);
command_fn add_chat(CLI::App& app);
command_fn add_logits(CLI::App& app);
command_fn add_embed(CLI::App& app);
command_fn add_perplexity(CLI::App& app);
command_fn add_info(CLI::App& app);
command_fn add_template(CLI::App& app);
command_fn add_grammar(CLI::App& app);
command_fn add_bench(CLI::App& app);
command_fn add_quantize(CLI::App& app);
command_fn add_synth(CLI::App& app);
command_fn add_tokenize(CLI::App&);
command_fn add_detokenize(CLI::App&);
command_fn add_serve(CLI::App& app);

}  // namespace glia::cli
