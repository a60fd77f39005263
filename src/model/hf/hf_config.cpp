#include "model/hf/hf_config.h"

#include <cmath>

#include "model/synth.h"

namespace glia::hf {

namespace {

// A member of cfg that must be a positive integer (or is optional and absent/null).
result<std::optional<int64_t>> positive_int(const json& cfg, std::string_view key, bool required) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) {
    if (required) return make_error("config.json: {} is missing", key);
    return std::optional<int64_t>{};
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > (int64_t(1) << 31))
    return make_error("config.json: {} must be a positive integer, found {}", key, it->dump());
  return std::optional<int64_t>(it->get<int64_t>());
}

result<int64_t> required_int(const json& cfg, std::string_view key) {
  GLIA_ASSIGN(const std::optional<int64_t> v, positive_int(cfg, key, true));
  return *v;
}

result<double> positive_number(const json& cfg, std::string_view key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || !it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
    return make_error("config.json: {} must be a positive number, found {}", key, it == cfg.end() ? "nothing" : it->dump());
  return it->get<double>();
}

// rope_scaling: {"rope_type" (or the older "type"): "linear" | "yarn" | "llama3" | "default", "factor", ...}.
status read_rope_scaling(const json& cfg, int64_t head_dim, double theta, model_config& out) {
  auto it = cfg.find("rope_scaling");
  if (it == cfg.end() || it->is_null()) return {};
  const json& rs = *it;
  if (!rs.is_object()) return make_error("config.json: rope_scaling must be an object or null, found {}", rs.dump());
  std::string type;
  for (const char* key : {"rope_type", "type"})
    if (auto t = rs.find(key); t != rs.end() && t->is_string()) type = t->get<std::string>();
  if (type.empty() || type == "default") return {};
  const std::string arch(out.fam->gguf_arch);
  auto factor = positive_number(rs, "factor");
  if (!factor) return make_error("{} (rope_scaling of type {})", factor.message(), type);
  if (type == "linear") {
    out.metadata.set_string(arch + ".rope.scaling.type", "linear");
    out.metadata.set_f32(arch + ".rope.scaling.factor", float(*factor));
    return {};
  }
  if (type == "yarn") {
    out.metadata.set_string(arch + ".rope.scaling.type", "yarn");
    out.metadata.set_f32(arch + ".rope.scaling.factor", float(*factor));
    auto orig = positive_int(rs, "original_max_position_embeddings", false);
    GLIA_TRY(orig);
    if (*orig) out.metadata.set_u32(arch + ".rope.scaling.original_context_length", uint32_t(**orig));
    for (auto [hf_key, gguf_key] : {std::pair{"beta_fast", "rope.scaling.yarn_beta_fast"}, std::pair{"beta_slow", "rope.scaling.yarn_beta_slow"}}) {
      if (!rs.contains(hf_key) || rs[hf_key].is_null()) continue;
      auto v = positive_number(rs, hf_key);
      GLIA_TRY(v);
      out.metadata.set_f32(arch + "." + gguf_key, float(*v));
    }
    return {};
  }
  if (type == "llama3") {
    llama3_rope_scaling s;
    s.factor = *factor;
    auto low = positive_number(rs, "low_freq_factor");
    GLIA_TRY(low);
    auto high = positive_number(rs, "high_freq_factor");
    GLIA_TRY(high);
    auto orig = positive_int(rs, "original_max_position_embeddings", true);
    GLIA_TRY(orig);
    s.low_freq_factor = *low;
    s.high_freq_factor = *high;
    s.original_context = int(**orig);
    out.rope_freq_factors = llama3_rope_factors(s, theta, int(head_dim));
    return {};
  }
  return make_error("config.json: rope_scaling type {} is not supported (linear, yarn, llama3)", type);
}

}  // namespace

result<model_config> read_model_config(const json& config, const std::string& name) {
  if (!config.is_object()) return make_error("config.json: not a JSON object");
  model_config out;
  auto fam = find_family(config);
  GLIA_TRY(fam);
  out.fam = *fam;
  json given = config;
  if (out.fam->text_config) {
    auto it = config.find("text_config");
    if (it == config.end() || !it->is_object())
      return make_error("config.json: {} keeps the language model's settings in \"text_config\", which is missing", out.fam->hf_arch);
    given = *it;
  }
  out.text = json::parse(out.fam->defaults);
  for (const auto& [k, v] : given.items()) out.text[k] = v;
  const json& cfg = out.text;
  const std::string arch(out.fam->gguf_arch);
  gguf::writer& md = out.metadata;

  GLIA_ASSIGN(const int64_t n_embd, required_int(cfg, "hidden_size"));
  GLIA_ASSIGN(out.n_layer, required_int(cfg, "num_hidden_layers"));
  GLIA_ASSIGN(const int64_t n_ff, required_int(cfg, "intermediate_size"));
  GLIA_ASSIGN(out.n_head, required_int(cfg, "num_attention_heads"));
  GLIA_ASSIGN(const int64_t n_ctx, required_int(cfg, "max_position_embeddings"));
  GLIA_ASSIGN(const std::optional<int64_t> n_head_kv, positive_int(cfg, "num_key_value_heads", false));
  GLIA_ASSIGN(const std::optional<int64_t> head_dim, positive_int(cfg, "head_dim", false));
  GLIA_ASSIGN(const double eps, positive_number(cfg, "rms_norm_eps"));
  GLIA_ASSIGN(const double theta, positive_number(cfg, "rope_theta"));
  out.n_head_kv = n_head_kv.value_or(out.n_head);
  if (auto t = cfg.find("tie_word_embeddings"); t != cfg.end()) {
    if (!t->is_boolean()) return make_error("config.json: tie_word_embeddings must be true or false, found {}", t->dump());
    out.tied = t->get<bool>();
  }
  std::string model_name = name;
  if (auto it = config.find("_name_or_path"); it != config.end() && it->is_string() && !it->get<std::string>().empty())
    model_name = it->get<std::string>();

  md.set_string("general.architecture", arch);
  md.set_string("general.name", model_name);
  md.set_u32(arch + ".context_length", uint32_t(n_ctx));
  md.set_u32(arch + ".embedding_length", uint32_t(n_embd));
  md.set_u32(arch + ".block_count", uint32_t(out.n_layer));
  md.set_u32(arch + ".feed_forward_length", uint32_t(n_ff));
  md.set_u32(arch + ".attention.head_count", uint32_t(out.n_head));
  md.set_u32(arch + ".attention.head_count_kv", uint32_t(out.n_head_kv));
  md.set_f32(arch + ".attention.layer_norm_rms_epsilon", float(eps));
  md.set_f32(arch + ".rope.freq_base", float(theta));
  if (head_dim) {
    md.set_u32(arch + ".attention.key_length", uint32_t(*head_dim));
    md.set_u32(arch + ".attention.value_length", uint32_t(*head_dim));
  }
  GLIA_TRY(read_rope_scaling(cfg, head_dim.value_or(n_embd / out.n_head), theta, out));
  if (out.fam->extra) GLIA_TRY(out.fam->extra(cfg, arch, md));
  return out;
}

}  // namespace glia::hf
