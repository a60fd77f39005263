#include "llama_cpp_flags.h"

#include <algorithm>
#include <string_view>

namespace glia::cli {
namespace {

struct flag {
  std::string_view llama_cpp;  // as llama.cpp's tools spell it
  std::string_view glia;       // glia's spelling, or empty: glia has no such option
  std::string_view why;        // for those it has not: what to do instead
};

constexpr std::string_view k_layers = "glia runs the whole model on one backend: --backend cuda for the GPU (no per-layer split)";
constexpr std::string_view k_draft_layers = "the draft model runs on the model's backend (--backend)";
constexpr std::string_view k_kv_type = "the KV cache type is --kv-type (f16 or f32, for keys and values together)";
constexpr std::string_view k_local = "glia loads local files and folders (-m PATH)";

constexpr flag flags[] = {
    {"-md", "--model-draft", ""},
    {"-np", "--parallel", ""},
    {"-ub", "--ubatch", ""},
    {"-sys", "--system", ""},
    {"-jf", "--json-schema-file", ""},
    {"-ngl", "", k_layers},
    {"--gpu-layers", "", k_layers},
    {"--n-gpu-layers", "", k_layers},
    {"-ngld", "", k_draft_layers},
    {"--gpu-layers-draft", "", k_draft_layers},
    {"--n-gpu-layers-draft", "", k_draft_layers},
    {"-fa", "", "glia's attention always streams over the KV cache (nothing to turn on)"},
    {"--flash-attn", "", "glia's attention always streams over the KV cache (nothing to turn on)"},
    {"-ctk", "", k_kv_type},
    {"--cache-type-k", "", k_kv_type},
    {"-ctv", "", k_kv_type},
    {"--cache-type-v", "", k_kv_type},
    {"-cnv", "", "conversations are `glia chat`"},
    {"--conversation", "", "conversations are `glia chat`"},
    {"-tb", "", "-t sets the threads of prompt processing and generation alike"},
    {"--threads-batch", "", "-t sets the threads of prompt processing and generation alike"},
    {"-hf", "", k_local},
    {"-hfr", "", k_local},
    {"--hf-repo", "", k_local},
};

// How many of the arguments after `arg` are its values: what the option needs at least (CLI11
// takes those whatever they look like); none for a flag, "--opt=value", "-n5" or an unknown name.
int values_after(const CLI::App& cmd, const std::string& arg) {
  if (arg.find('=') != std::string::npos) return 0;
  const bool short_form = arg.size() >= 2 && arg[0] == '-' && arg[1] != '-';
  if (short_form && arg.size() > 2) return 0;  // "-n5": the value is attached (or a combined flag)
  const CLI::Option* opt = cmd.get_option_no_throw(arg);
  // CLI11 takes this many whatever they look like (App::_parse_arg); any more only if not option-like.
  return opt ? std::max(0, std::min(opt->get_type_size_min(), opt->get_items_expected_min())) : 0;
}

}  // namespace

status translate_llama_cpp_flags(const CLI::App& app, std::vector<std::string>& args) {
  const CLI::App* cmd = &app;
  int values = 0;  // arguments still to come that are the last option's values
  for (std::string& a : args) {
    if (values > 0) {
      --values;
      continue;
    }
    if (a == "--") break;
    if (a.empty() || a[0] != '-') {
      const auto named = cmd->get_subcommands([&](const CLI::App* sub) { return sub->check_name(a); });
      if (!named.empty()) cmd = named.front();
      continue;
    }
    const size_t eq = a.find('=');  // "--n-gpu-layers=99"
    const std::string_view name = std::string_view(a).substr(0, eq);
    for (const flag& f : flags) {
      if (name != f.llama_cpp) continue;
      if (f.glia.empty()) return make_error("{} is llama.cpp's option, not glia's: {}", name, f.why);
      a = std::string(f.glia) + (eq == std::string::npos ? "" : a.substr(eq));
      break;
    }
    values = values_after(*cmd, a);
  }
  return {};
}

}  // namespace glia::cli
