#include "llama_cpp_flags.h"

#include <algorithm>
#include <string_view>

namespace glia::cli {
namespace {

struct flag {
  std::string_view llama_cpp;  // as llama.cpp's tools spell it
  std::string_view glia;       // glia's spelling, or empty: glia has no such option
  std::string_view why;        // for those it has not: what to do instead; empty: glia always does
                               // what the flag asks (it is dropped)
};

constexpr std::string_view k_layers = "glia runs the whole model on one backend: --backend cuda for the GPU (no per-layer split)";
constexpr std::string_view k_draft_layers = "the draft model runs on the model's backend (--backend)";
constexpr std::string_view k_kv_type = "the KV cache type is --kv-type (f16 or f32, for keys and values together)";
constexpr std::string_view k_local = "glia loads local files and folders (-m PATH)";
constexpr std::string_view k_one_turn = "`glia run` answers one prompt; `glia chat` converses (and reads piped turns)";
constexpr std::string_view k_mapped = "glia maps the model file; --no-mmap reads it into memory instead (there is no page locking)";

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
    {"-pg", "--pg", ""},
    // What glia always does: dropped.
    {"-no-cnv", "", ""},
    {"--no-conversation", "", ""},
    {"-cb", "", ""},
    {"--cont-batching", "", ""},
    // What glia has no option for.
    {"-nocb", "", "glia serve always batches the requests of its slots together"},
    {"--no-cont-batching", "", "glia serve always batches the requests of its slots together"},
    {"-nkvo", "", k_layers},
    {"--no-kv-offload", "", k_layers},
    {"-ts", "", k_layers},
    {"--tensor-split", "", k_layers},
    {"-sm", "", k_layers},
    {"--split-mode", "", k_layers},
    {"-mmp", "", k_mapped},
    {"--mlock", "", k_mapped},
    {"-mli", "", "glia chat reads one line per turn"},
    {"--multiline-input", "", "glia chat reads one line per turn"},
    {"-st", "", k_one_turn},
    {"--single-turn", "", k_one_turn},
    {"-sp", "", "glia run prints the text of generated tokens, control tokens as nothing (`glia tokenize` shows every token)"},
    {"--special", "", "glia run prints the text of generated tokens, control tokens as nothing (`glia tokenize` shows every token)"},
    {"-to", "", "glia serve has no request timeout (a client that goes away cancels its request)"},
    {"--timeout", "", "glia serve has no request timeout (a client that goes away cancels its request)"},
    {"-cram", "", "glia serve reuses a slot's cached prefix; there is no separate prompt cache"},
    {"--cache-ram", "", "glia serve reuses a slot's cached prefix; there is no separate prompt cache"},
    {"-lv", "", "glia has no log levels: statistics go to stderr (glia chat --verbose adds the tokens of each turn)"},
    {"--verbosity", "", "glia has no log levels: statistics go to stderr (glia chat --verbose adds the tokens of each turn)"},
};

// "-nkvo" and the like that the table does not know: llama.cpp's multi-letter spelling, which CLI11
// would read as a one-letter option with an attached value ("-n kvo") and then blame that option.
// Letters and hyphens only, so that "-n5" and "-t2" (a value attached) still reach CLI11.
bool looks_multi_letter(std::string_view a) {
  if (a.size() < 3 || a[0] != '-' || a[1] == '-') return false;
  return std::all_of(a.begin() + 1, a.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-'; });
}

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
  std::vector<std::string> out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string& a = args[i];
    if (values > 0) {
      --values;
      out.push_back(std::move(a));
      continue;
    }
    if (a == "--") break;
    if (a.empty() || a[0] != '-') {
      const auto named = cmd->get_subcommands([&](const CLI::App* sub) { return sub->check_name(a); });
      if (!named.empty()) cmd = named.front();
      out.push_back(std::move(a));
      continue;
    }
    const size_t eq = a.find('=');  // "--n-gpu-layers=99"
    const std::string name(std::string_view(a).substr(0, eq));
    const flag* known = nullptr;
    for (const flag& f : flags)
      if (name == f.llama_cpp) known = &f;
    if (known && known->glia.empty() && known->why.empty()) continue;  // what glia does anyway
    if (known && known->glia.empty()) return make_error("{} is llama.cpp's option, not glia's: {}", name, known->why);
    if (known) a = std::string(known->glia) + (eq == std::string::npos ? "" : a.substr(eq));
    if (!known && looks_multi_letter(name) && !cmd->get_option_no_throw(name))
      return make_error("unknown option {} (glia's options after one dash are one letter: {} would be read as -{} {}); see {} --help", name,
                        name, name[1], name.substr(2), cmd->get_name().empty() ? "glia" : "glia " + cmd->get_name());
    values = values_after(*cmd, a);
    out.push_back(std::move(a));
  }
  for (; i < args.size(); ++i) out.push_back(std::move(args[i]));
  args = std::move(out);
  return {};
}

}  // namespace glia::cli
