// --model-draft, --draft-max, --draft-min, --draft-p-min (llama.cpp's names): speculative decoding for run
// and chat with a smaller model of the same vocabulary.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "glia/session.h"

namespace glia::cli {

struct draft_options {
  std::string model;
  int n_max = 16;
  int n_min = 0;
  float p_min = 0.75f;

  void add_to(CLI::App* cmd);
  // The draft session (null without -md), loaded with the target's settings and context size and
  // checked against its vocabulary; sets `go` to use it.
  result<std::unique_ptr<session>> open(const session& target, const session_options& target_opts, generate_options& go) const;
  // "draft: 40 proposed, 31 accepted (78%)", or "" without a draft.
  static std::string summary(const generate_options& go, const generation_stats& st);
};

}  // namespace glia::cli
