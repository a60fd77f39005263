// glia synth: write a random-weight model with the geometry of a real one (for benchmarks).
#include <fmt/core.h>

#include <chrono>

#include "commands.h"
#include "common_options.h"
#include "interrupts.h"
#include "model/synth.h"

namespace glia::cli {
namespace {

std::string preset_list() {
  std::string s;
  for (const auto& p : synth_presets()) s += fmt::format("{}{}", s.empty() ? "" : ", ", p.name);
  return s;
}

}  // namespace

command_fn add_synth(CLI::App& app) {
  auto* cmd = app.add_subcommand("synth", "write a random-weight model with the geometry of a real one (for benchmarks)");
  struct opts {
    std::string preset, type = "Q8_0", out;
    uint64_t seed = 42;
    int n_threads = 0;
    int n_layer = 0;
    int64_t n_vocab = 0;
    bool quiet = false;
  };
  auto o = std::make_shared<opts>();
  cmd->add_option("--preset", o->preset, "model geometry: " + preset_list())->required();
  cmd->add_option("--type", o->type, "weight type or mix, as for quantize (Q8_0, Q4_0, Q4_K_M, F16...)")->capture_default_str();
  cmd->add_option("--out", o->out, "GGUF file to write")->required();
  cmd->add_option("-s,--seed", o->seed, "random seed")->transform(seed_check(false))->capture_default_str();
  cmd->add_option("-t,--threads", o->n_threads, "threads (0, the default: one per core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--layers", o->n_layer, "override the layer count (quick experiments, tests)")->check(CLI::Range(1, 1024));
  cmd->add_option("--vocab", o->n_vocab, "override the vocabulary size (quick experiments, tests)")->check(CLI::Range(synth_min_vocab(), synth_max_vocab));
  cmd->add_flag("-q,--quiet", o->quiet, "no per-tensor lines");

  return [o]() {
    synth_options s;
    s.preset = find_synth_preset(o->preset);
    if (!s.preset) {
      fmt::print(stderr, "error: unknown preset '{}' (known: {})\n", o->preset, preset_list());
      return 1;
    }
    auto ft = parse_file_type(o->type);
    if (!ft) {
      fmt::print(stderr, "error: unknown type '{}'\n", o->type);
      return 1;
    }
    s.ftype = *ft;
    s.seed = o->seed;
    s.n_threads = o->n_threads;
    if (o->n_layer > 0) s.n_layer = o->n_layer;
    if (o->n_vocab > 0) s.n_vocab = o->n_vocab;
    if (!o->quiet) s.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    s.cancel = stop_on_interrupt();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = synth_model(s, o->out);
    if (!r) {
      fmt::print(stderr, "error: {}\n", r.message());
      return 1;
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "wrote {}: {} ({}), {} tensors, {:.3f} B parameters, {:.2f} MiB in {:.1f} s\n", o->out,
               s.preset->model_name, find_file_type(s.ftype)->name, r->n_tensors, double(r->n_params) / 1e9,
               double(r->bytes) / (1 << 20), sec);
    return 0;
  };
}

}  // namespace glia::cli
