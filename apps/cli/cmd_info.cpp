// glia info: what a model file is (architecture, hyperparameters, tensors by type) and the memory it
// needs. An inspection tool, so it reads the module APIs directly.
#include <fmt/core.h>

#include <map>

#include "commands.h"
#include "gguf/printable.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/tensor_check.h"
#include "quant/types.h"

namespace glia::cli {
namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) {
    b /= 1024.0;
    ++u;
  }
  return fmt::format("{:.2f} {}", b, units[u]);
}

}  // namespace

command_fn add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "describe a model file");
  struct opts {
    std::string path;
    int n_ctx = 0;
    std::string kv_type = "f16";
    bool check = false;
  };
  auto o = std::make_shared<opts>();
  cmd->add_option("-m,--model", o->path, "GGUF model file or Hugging Face checkpoint folder")->required()->check(CLI::ExistingPath);
  cmd->add_option("-c,--ctx-size", o->n_ctx, "context size for the memory estimate (default: the model's, at most 4096)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_flag("--check-tensors", o->check, "scan every weight (quant scales included) for NaN/Inf");
  cmd->add_option("--kv-type", o->kv_type, "KV cache precision for the estimate")->check(CLI::IsMember({"f16", "f32"}));

  return [o]() {
    auto m = load_model(o->path);
    if (!m) {
      fmt::print(stderr, "error: {}\n", m.message());
      return 1;
    }
    const model& md = **m;
    const family_profile& p = md.profile;
    fmt::print("file:            {} ({}, {})\n", o->path, md.file->origin(), human_bytes(double(md.file->size())));
    // The name comes from the file: control bytes (a terminal's escape sequences) are shown escaped.
    fmt::print("architecture:    {}{}\n", p.arch, p.name.empty() ? "" : fmt::format(" ({})", gguf::detail::printable(p.name)));
    fmt::print("vocabulary:      {}\n", p.n_vocab);
    fmt::print("embedding:       {}\n", p.n_embd);
    fmt::print("layers:          {}\n", p.n_layer);
    fmt::print("feed-forward:    {} ({})\n", p.n_ff, p.ffn_act == activation::silu ? "SiLU" : "GELU-tanh");
    fmt::print("context (train): {}\n", p.n_ctx_train);
    fmt::print("rms eps:         {}\n", p.norm_eps);
    // One line per run of layers that read alike ("layers 0-4", then "layer 5").
    auto describe_layer = [&](const layer_profile& l) {
      return fmt::format("heads {}/{} kv, head dim {}/{}, {} attention{}, RoPE {} dims ({}) base {} scale {}{}", l.n_head,
                         l.n_head_kv, l.head_dim_k, l.head_dim_v, l.sliding ? "sliding" : "full",
                         l.sliding ? fmt::format(" (window {})", l.window) : "", l.rope.n_rot,
                         l.rope.style == rope_style::neox ? "NeoX halves" : "adjacent pairs", l.rope.freq_base,
                         l.rope.freq_scale, l.rope.ext_factor != 0 ? " YaRN" : "");
    };
    for (int first = 0; first < p.n_layer;) {
      const std::string text = describe_layer(p.layers[size_t(first)]);
      int last = first;
      while (last + 1 < p.n_layer && describe_layer(p.layers[size_t(last + 1)]) == text) ++last;
      const std::string which = first == last ? fmt::format("layer {}:", first) : fmt::format("layers {}-{}:", first, last);
      fmt::print("{:<17}{}\n", which, text);
      first = last + 1;
    }
    if (p.attn_softcap > 0) fmt::print("attention softcap: {}\n", p.attn_softcap);
    if (p.final_softcap > 0) fmt::print("final softcap:   {}\n", p.final_softcap);
    fmt::print("LM head:         {}\n", md.weights.tied_output ? "tied to the token embedding" : "separate");

    std::map<std::string, std::pair<int, uint64_t>> by_type;
    uint64_t weight_bytes = 0;
    for (const auto& t : md.file->tensors()) {
      auto& e = by_type[std::string(type_name(t.type))];
      ++e.first;
      e.second += t.n_bytes;
      weight_bytes += t.n_bytes;
    }
    fmt::print("tensors:         {}\n", md.file->tensors().size());
    for (const auto& [name, e] : by_type) fmt::print("  {:8} {:5} tensors {:>12}\n", name, e.first, human_bytes(double(e.second)));
    const int n_ctx = o->n_ctx > 0 ? o->n_ctx : std::min(p.n_ctx_train, 4096);
    // In the order that takes the most (the CPU's: K in whole chunks of slots); no backend is made here.
    const size_t kv = kv_cache::bytes_needed(p, n_ctx, 512, o->kv_type == "f32" ? dtype::f32 : dtype::f16, kv_order::head_major_kt);
    fmt::print("memory:          weights {} + KV cache {} ({} tokens, {}) = {}\n", human_bytes(double(weight_bytes)),
               human_bytes(double(kv)), n_ctx, o->kv_type, human_bytes(double(weight_bytes + kv)));
    fmt::print("decode reads:    {} of weights per token\n", human_bytes(double(md.decode_weight_bytes())));
    if (o->check) {
      status c = check_tensors(*md.file, 0);
      if (!c) {
        fmt::print(stderr, "error: {}\n", c.message());
        return 1;
      }
      fmt::print("tensors checked: all values finite\n");
    }
    return 0;
  };
}

}  // namespace glia::cli
