// Sampling flags with llama.cpp's spellings. The model's general.sampling.* defaults apply first; any
// flag the user gives wins over them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "glia/session.h"

namespace glia::cli {

class sampling_options {
 public:
  void add_to(CLI::App* cmd);
  // The parameters for this model: defaults, then the model's metadata, then the user's flags.
  // Prints the seed on stderr when it was chosen at random. Fails on out-of-range values.
  result<sampler_params> resolve(const session& s) const;
  bool ignore_eos() const { return ignore_eos_; }

 private:
  sampler_params user_;
  std::string seed_;  // as typed (seed_check): empty or -1 for a random seed
  std::vector<std::string> logit_bias_;
  bool ignore_eos_ = false;
  // Constrained output: at most one of these (llama.cpp's --grammar, --grammar-file, -j, -jf).
  std::string grammar_, grammar_file_, json_schema_, json_schema_file_;
  CLI::Option *grammar_opt_ = nullptr, *grammar_file_opt_ = nullptr, *json_schema_opt_ = nullptr, *json_schema_file_opt_ = nullptr;
  result<std::shared_ptr<const grammar::compiled>> resolve_grammar() const;
  // Each option the user may set, with how to copy it from user_ into the result.
  std::vector<std::pair<CLI::Option*, std::function<void(sampler_params&)>>> set_;
};

}  // namespace glia::cli
