// Options shared by the commands that load a model for inference.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "glia/session.h"

namespace glia::cli {

inline void add_session_options(CLI::App* cmd, session_options& o) {
  cmd->add_option("-m,--model", o.model_path, "GGUF model file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-c,--ctx-size", o.n_ctx, "context size in tokens (default: the model's, at most 4096)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("-t,--threads", o.n_threads, "threads (default: one per core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--kv-type", o.kv_type, "KV cache precision")->check(CLI::IsMember({"f16", "f32"}))->capture_default_str();
  cmd->add_option("--backend", o.backend, "compute backend")->check(CLI::IsMember({"cpu", "ref"}))->capture_default_str();
  cmd->add_option("-b,--ubatch", o.n_ubatch, "tokens per forward chunk during prompt processing")
      ->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_flag("!--no-mmap", o.use_mmap, "read the model into memory instead of mapping it");
}

}  // namespace glia::cli
