// Options shared by the commands that load a model for inference.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <memory>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "escapes.h"
#include "glia/session.h"

namespace glia::cli {

// --cpu-isa, shared by the commands that run a model and by bench.
// (bench takes a list of them)
template <typename Target>
CLI::Option* add_cpu_isa_option(CLI::App* cmd, Target& isa) {
  return cmd->add_option("--cpu-isa", isa, "cap on the CPU kernels' instruction set (best: the best this CPU runs)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(cpu_isa_names), std::end(cpu_isa_names))))
      ->capture_default_str();
}

// A random seed as typed: any 64-bit value (CLI11 alone would wrap "-1" and clamp values past
// 2^64 - 1 without a word), and "-1" as llama.cpp's "pick one at random" where `minus_one` allows.
inline std::optional<uint64_t> parse_seed(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}
// A text that must not be empty (a stop string that is empty would match nowhere, silently).
inline const CLI::Validator non_empty_text(
    [](std::string& s) -> std::string { return s.empty() ? "must not be empty" : ""; }, "TEXT");

inline CLI::Validator seed_check(bool minus_one) {
  return CLI::Validator(
      [minus_one](std::string& s) -> std::string {
        if (minus_one && s == "-1") return "";
        // Written back in plain decimal (a transform): CLI11 would read "010" as octal when it converts.
        if (auto v = parse_seed(s)) {
          s = std::to_string(*v);
          return "";
        }
        return "expected an integer in 0..18446744073709551615" + std::string(minus_one ? ", or -1 for a random seed" : "");
      },
      "SEED");
}

inline void add_session_options(CLI::App* cmd, session_options& o) {
  cmd->add_option("-m,--model", o.model_path, "GGUF model file or Hugging Face checkpoint folder")->required()->check(CLI::ExistingPath);
  cmd->add_option("-c,--ctx-size", o.n_ctx, "context size in tokens (default: the model's, at most 4096)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("-t,--threads", o.n_threads, "threads (0, the default: one per core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--kv-type", o.kv_type, "KV cache precision")->check(CLI::IsMember({"f16", "f32"}))->capture_default_str();
  cmd->add_option("--backend", o.backend, "compute backend: auto (cuda when a GPU is present, else cpu), cpu, cuda, ref")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "ref"}))
      ->capture_default_str();
  add_cpu_isa_option(cmd, o.cpu_isa);
  // -b is glia's chunk; llama.cpp's -b (the logical batch) and -ub (the chunk, at most -b) given
  // together chunk by the smaller, as llama.cpp clamps n_ubatch to n_batch ("-ub 512 -b 2048": 512).
  // (Subcommands have no callback that runs after all their options, so each value updates the
  // result as it is read; the options themselves only hold what was typed.)
  struct chunk_flags {
    int b = 0, ub = 0;  // 0: not given
  };
  auto given = std::make_shared<chunk_flags>();
  auto set = [&o, given](int chunk_flags::*which) {
    return [&o, given, which](const std::string& v) {
      given.get()->*which = std::stoi(v);
      o.n_ubatch = given->b > 0 && given->ub > 0 ? std::min(given->b, given->ub) : std::max(given->b, given->ub);
    };
  };
  cmd->add_option("-b,--batch-size", given->b,
                  "tokens per forward chunk during prompt processing (default 512; sliding-window caches are sized for "
                  "512 even when it is smaller, so that results do not depend on it)")
      ->check(CLI::Range(1, 65536))
      ->each(set(&chunk_flags::b));
  cmd->add_option("--ubatch,--ubatch-size", given->ub, "llama.cpp's -ub: the chunk; with -b too, the smaller of the two")
      ->check(CLI::Range(1, 65536))
      ->each(set(&chunk_flags::ub));
  cmd->add_flag("!--no-mmap", o.use_mmap, "read the model into memory instead of mapping it");
  cmd->add_flag("!--no-repack", o.repack_weights,
                "compute from the file's weight layout instead of repacking weights at load (less memory, slower)");
  cmd->add_flag("--check-tensors", o.check_tensors, "scan every weight (quant scales included) for NaN/Inf before use");
}

// --reasoning-budget N and --reasoning-budget-message TEXT (backslash escapes read), for chat and serve.
inline void add_reasoning_budget_options(CLI::App* cmd, int& budget, std::string& message, const char* per) {
  cmd->add_option("--reasoning-budget", budget,
                  std::string("tokens a reasoning model may think ") + per +
                      " before its close tag (</think>) is forced and it answers; -1: no limit, 0: no thinking (the template's "
                      "enable_thinking is false)")
      ->check(CLI::Range(-1, INT32_MAX))
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--reasoning-budget-message", [&message](const std::string& v) { message = process_escapes(v); },
         "text forced into the reasoning before its close tag when the budget is spent (backslash escapes as in -p), e.g. "
         "\"\\n\\nTime is up; answering now.\\n\"")
      ->type_name("TEXT");
}

}  // namespace glia::cli

namespace glia::cli {

// --profile / --profile-json / --trace and --dump-tensors: set up before evaluation, written after.
struct diagnostics_options {
  bool profile = false;
  std::string profile_json;
  std::string trace;
  std::string dump_pattern;
  std::string dump_dir = "tensor_dump";
  int dump_positions = 4;

  void add_to(CLI::App* cmd) {
    cmd->add_flag("--profile", profile, "print per-op timings (overall, in prefill, in decode and per decoded token) and prefill/decode tokens/s on stderr");
    cmd->add_option("--profile-json", profile_json, "write the per-op profile as JSON to FILE");
    cmd->add_option("--trace", trace, "write a Chrome trace (chrome://tracing, Perfetto) of every op to FILE");
    cmd->add_option("--dump-tensors", dump_pattern,
                    "dump intermediates whose names match PATTERN (glob, comma-separated; e.g. 'blk.3.*,logits')");
    cmd->add_option("--dump-dir", dump_dir, "folder for --dump-tensors files and index.json")->capture_default_str();
    cmd->add_option("--dump-positions", dump_positions, "positions to dump per tensor")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  }

  // False (after printing why) when an output file could not be written: checked before the run,
  // so that a long generation does not end without its profile.
  bool start(session& s) const;

  // Returns false (after printing why) when a file could not be written.
  bool finish(session& s) const;
};

}  // namespace glia::cli
