#include "sampling_options.h"

#include <fmt/core.h>

#include <cmath>
#include <random>

#include "common_options.h"
#include "core/read_file.h"
#include "sampler/grammar/constraint.h"

namespace glia::cli {

void sampling_options::add_to(CLI::App* cmd) {
  auto add = [&](const char* flags, auto member, const char* help) {
    CLI::Option* o = cmd->add_option(flags, user_.*member, help)->capture_default_str()->group("Sampling");
    set_.emplace_back(o, [this, member](sampler_params& p) { p.*member = user_.*member; });
  };
  add("--temp", &sampler_params::temperature, "temperature (0 or below = greedy)");
  add("--top-k", &sampler_params::top_k, "top-k (0 = off)");
  add("--top-p", &sampler_params::top_p, "top-p (1 = off)");
  add("--min-p", &sampler_params::min_p, "min-p, relative to the most likely token (0 = off)");
  add("--typical", &sampler_params::typical_p, "locally typical sampling p (1 = off)");
  add("--repeat-penalty", &sampler_params::repeat_penalty, "penalty for repeated tokens (1 = off)");
  add("--repeat-last-n", &sampler_params::repeat_last_n, "tokens the penalties look back over (0 = off, -1 = context)");
  add("--presence-penalty", &sampler_params::presence_penalty, "presence penalty (0 = off)");
  add("--frequency-penalty", &sampler_params::frequency_penalty, "frequency penalty (0 = off)");
  add("--dry-multiplier", &sampler_params::dry_multiplier, "DRY repetition penalty multiplier (0 = off)");
  add("--dry-base", &sampler_params::dry_base, "DRY base");
  add("--dry-allowed-length", &sampler_params::dry_allowed_length, "DRY: repeats up to this length are free");
  add("--dry-penalty-last-n", &sampler_params::dry_penalty_last_n, "DRY look-back (0 = off, -1 = context)");
  add("--xtc-probability", &sampler_params::xtc_probability, "XTC probability (0 = off)");
  add("--xtc-threshold", &sampler_params::xtc_threshold, "XTC threshold");
  CLI::Option* bias = cmd->add_option("-l,--logit-bias", logit_bias_, "TOKEN_ID(+|-)BIAS, e.g. 15043+1 or 2-inf; repeatable")
                          ->take_all()
                          ->group("Sampling");
  set_.emplace_back(bias, [](sampler_params&) {});
  cmd->add_flag("--ignore-eos", ignore_eos_,
                "never end at an end-of-generation token (EOS, EOT, ...): generate -n tokens, as llama.cpp's --ignore-eos")
      ->group("Sampling");
  grammar_opt_ = cmd->add_option("--grammar", grammar_, "constrain the generated text to this GBNF grammar (llama.cpp's notation; root rule 'root')")
      ->group("Constrained output");
  grammar_file_opt_ = cmd->add_option("--grammar-file", grammar_file_, "the same, read from a file")->group("Constrained output");
  json_schema_opt_ = cmd->add_option("-j,--json-schema", json_schema_,
                  "constrain the generated text to JSON valid under this JSON schema (e.g. '{}' for any JSON value)")
      ->group("Constrained output");
  json_schema_file_opt_ = cmd->add_option("--json-schema-file", json_schema_file_, "the same, read from a file")->group("Constrained output");
  cmd->add_option("-s,--seed", seed_, "random seed (default, -1 or 4294967295 as llama.cpp: random, printed on stderr)")
      ->transform(seed_check(true))
      ->group("Sampling");
}

result<sampler_params> sampling_options::resolve(const session& s) const {
  sampler_params p;
  status defaults = apply_gguf_sampling_defaults(p, [&s](std::string_view key) { return s.metadata_number(key); });
  if (!defaults) fmt::print(stderr, "warning: model sampling defaults: {}\n", defaults.message());
  for (const auto& [opt, copy] : set_)
    if (opt->count() > 0) copy(p);
  if (p.temperature < 0.0f) p.temperature = 0.0f;  // llama.cpp samples greedily at a temperature <= 0
  for (const std::string& item : logit_bias_) {
    const size_t sign = item.find_first_of("+-", 1);
    if (sign == std::string::npos) return make_error("--logit-bias '{}': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS", item);
    char* end = nullptr;
    const long id = std::strtol(item.c_str(), &end, 10);
    if (end != item.c_str() + sign || id < 0 || id >= s.n_vocab())
      return make_error("--logit-bias '{}': token id must be in 0..{}", item, s.n_vocab() - 1);
    const std::string value = item.substr(sign);
    float bias;
    if (value == "-inf") {
      bias = -INFINITY;
    } else if (value == "+inf") {
      return make_error("--logit-bias '{}': +inf is not allowed (a large finite bias makes a token all but certain; -inf bans it)", item);
    } else {
      bias = std::strtof(value.c_str(), &end);
      if (*end != '\0' || !std::isfinite(bias)) return make_error("--logit-bias '{}': '{}' is not a number", item, value);
    }
    p.logit_bias[int32_t(id)] += bias;  // a token biased twice gets both, as in llama.cpp
  }
  if (ignore_eos_) s.forbid_end_of_generation(p);
  auto g = resolve_grammar();
  if (!g) return g.take_error();
  p.grammar = *g;
  // 4294967295 is llama.cpp's LLAMA_DEFAULT_SEED, which it reads as "random" (its -1 wraps to it).
  if (auto seed = parse_seed(seed_); seed && *seed != 0xFFFFFFFF) {
    p.seed = *seed;
  } else {
    p.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
    if (draws_at_random(p)) fmt::print(stderr, "seed: {}\n", p.seed);
  }
  GLIA_TRY(validate(p));
  return p;
}

result<std::shared_ptr<const grammar::compiled>> sampling_options::resolve_grammar() const {
  auto given_opt = [](const CLI::Option* o) { return o && o->count() > 0; };
  const int given = given_opt(grammar_opt_) + given_opt(grammar_file_opt_) + given_opt(json_schema_opt_) + given_opt(json_schema_file_opt_);
  if (given > 1) return make_error("--grammar, --grammar-file, --json-schema and --json-schema-file: give one of them");
  auto read = [](const std::string& path, const char* option) -> result<std::string> {
    auto text = read_whole_file(path);
    if (!text) return make_error("{}: {}", option, text.message());
    return text;
  };
  auto prefixed = [](result<grammar::compiled_ptr> g, const char* option) -> result<grammar::compiled_ptr> {
    if (!g) return make_error("{}: {}", option, g.message());
    return g;
  };
  if (given_opt(grammar_opt_)) return prefixed(grammar::from_gbnf(grammar_), "--grammar");
  if (given_opt(json_schema_opt_)) return prefixed(grammar::from_json_schema_text(json_schema_), "--json-schema");
  if (given_opt(grammar_file_opt_)) {
    GLIA_ASSIGN(auto text, read(grammar_file_, "--grammar-file"));
    return prefixed(grammar::from_gbnf(text), "--grammar-file");
  }
  if (given_opt(json_schema_file_opt_)) {
    GLIA_ASSIGN(auto text, read(json_schema_file_, "--json-schema-file"));
    return prefixed(grammar::from_json_schema_text(text), "--json-schema-file");
  }
  return grammar::compiled_ptr{};
}

}  // namespace glia::cli
