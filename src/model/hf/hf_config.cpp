#include "model/hf/hf_config.h"

#include <climits>
#include <cmath>
#include <limits>

#include "core/json_depth.h"
#include "core/json_error.h"
#include "model/rope_scaling.h"

namespace glia::hf {

namespace {

// A member of cfg that must be a positive integer (or is optional and absent/null).
result<std::optional<int64_t>> positive_int(const json& cfg, std::string_view key, bool required) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) {
    if (required) return make_error("config.json: {} is missing", key);
    return std::optional<int64_t>{};
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > INT32_MAX)
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

bool present(const json& cfg, std::string_view key) { return cfg.contains(key) && !cfg[std::string(key)].is_null(); }

// A true/false setting; absent or null is false, as transformers reads it.
result<bool> flag(const json& cfg, std::string_view key) {
  if (!present(cfg, key)) return false;
  const json& v = cfg[std::string(key)];
  if (!v.is_boolean()) return make_error("config.json: {} must be true or false, found {}", key, v.dump());
  return v.get<bool>();
}

// Rotating part of each head (transformers' partial_rotary_factor, at the top level or, since
// transformers 5, in rope_parameters) is not what these architectures do.
status refuse_partial_rotary(const json& obj, std::string_view where) {
  if (present(obj, "partial_rotary_factor") && obj["partial_rotary_factor"] != 1 && obj["partial_rotary_factor"] != 1.0)
    return make_error("config.json: {}partial_rotary_factor {} is not supported", where, obj["partial_rotary_factor"].dump());
  return {};
}

// The RoPE settings: transformers 5 keeps them in "rope_parameters" ({"rope_type", "rope_theta",
// "factor", ...}, or one such object per layer type for models that mix sliding and full attention);
// earlier versions in "rope_theta" and "rope_scaling".
struct rope_settings {
  double theta = 0;
  json scaling;                  // {"rope_type" (or "type"), "factor", ...}; null: none
  std::optional<double> theta_local;  // sliding-window layers, where it differs
};

result<rope_settings> read_rope_settings(const json& given, const json& cfg) {
  rope_settings r;
  auto rp = given.find("rope_parameters");
  if (rp == given.end() || rp->is_null()) {
    GLIA_ASSIGN(r.theta, positive_number(cfg, "rope_theta"));
    if (auto it = cfg.find("rope_scaling"); it != cfg.end()) r.scaling = *it;
    return r;
  }
  if (!rp->is_object()) return make_error("config.json: rope_parameters must be an object, found {}", rp->dump());
  const bool per_layer_type = rp->contains("full_attention") || rp->contains("sliding_attention");
  const json global = per_layer_type ? rp->value("full_attention", json::object()) : *rp;
  if (!global.is_object()) return make_error("config.json: rope_parameters.full_attention must be an object");
  // transformers 5 fills a missing rope_theta from the top level (or the class default), and lets a
  // legacy rope_scaling beside rope_parameters win; one that disagrees is refused here instead.
  auto theta = present(global, "rope_theta") ? positive_number(global, "rope_theta") : positive_number(cfg, "rope_theta");
  if (!theta) return make_error("{} (in rope_parameters)", theta.message());
  r.theta = *theta;
  r.scaling = global;
  if (present(given, "rope_scaling")) {
    // Compared as scaling settings: without the base, the kind under either of its names.
    auto settings = [](const json& j) {
      json out = j;
      const json kind = j.contains("rope_type") ? j["rope_type"] : j.contains("type") ? j["type"] : json("default");
      out.erase("rope_theta");
      out.erase("type");
      out["rope_type"] = kind;
      return out;
    };
    const json& legacy = given["rope_scaling"];
    if (!legacy.is_object()) return make_error("config.json: rope_scaling must be an object or null, found {}", legacy.dump());
    if (settings(legacy) != settings(global))
      return make_error("config.json: rope_scaling {} and rope_parameters {} disagree", legacy.dump(), global.dump());
  }
  GLIA_TRY(refuse_partial_rotary(global, "rope_parameters' "));
  if (present(given, "rope_theta") && present(global, "rope_theta") && given["rope_theta"] != global["rope_theta"])
    return make_error("config.json: rope_theta {} and rope_parameters' {} disagree", given["rope_theta"].dump(), global["rope_theta"].dump());
  if (per_layer_type && rp->contains("sliding_attention")) {
    const json& local = (*rp)["sliding_attention"];
    if (!local.is_object()) return make_error("config.json: rope_parameters.sliding_attention must be an object");
    auto local_theta = positive_number(local, "rope_theta");
    if (!local_theta) return make_error("{} (in rope_parameters.sliding_attention)", local_theta.message());
    r.theta_local = *local_theta;
    GLIA_TRY(refuse_partial_rotary(local, "rope_parameters.sliding_attention's "));
    if (present(local, "rope_type") && local["rope_type"] != "default")
      return make_error("config.json: RoPE scaling on sliding-window layers ({}) is not supported", local["rope_type"].dump());
  }
  return r;
}

// rope_scaling: {"rope_type" (or the older "type"): "linear" | "yarn" | "llama3" | "default", "factor", ...}.
status read_rope_scaling(const json& rs, int64_t head_dim, double theta, model_config& out) {
  if (rs.is_null()) return {};
  if (!rs.is_object()) return make_error("config.json: rope_scaling must be an object or null, found {}", rs.dump());
  std::string type;  // transformers reads "rope_type", else the older "type"
  const char* key = present(rs, "rope_type") ? "rope_type" : "type";
  if (auto t = rs.find(key); t != rs.end() && !t->is_null()) {
    if (!t->is_string()) return make_error("config.json: rope_scaling.{} must be a string, found {}", key, t->dump());
    type = t->get<std::string>();
  }
  if (type.empty() || type == "default") return {};
  if (type != "linear" && type != "yarn" && type != "llama3")
    return make_error("config.json: rope_scaling type {} is not supported (linear, yarn, llama3)", type);
  const std::string arch(out.fam->gguf_arch);
  auto factor = positive_number(rs, "factor");
  if (!factor) return make_error("{} (rope_scaling of type {})", factor.message(), type);
  // Stored as a float: 1e-300 would become 0, which reads as "no scaling", and a subnormal one
  // makes 1 / factor infinite.
  if (!(float(*factor) >= std::numeric_limits<float>::min()) || !std::isfinite(float(*factor)))
    return make_error("config.json: rope_scaling.factor {} is outside the range of a float", *factor);
  if (type == "linear") {
    out.metadata.set_string(arch + ".rope.scaling.type", "linear");
    out.metadata.set_f32(arch + ".rope.scaling.factor", float(*factor));
    return {};
  }
  if (type == "yarn") {
    // These change YaRN's attention scale or ramp from the formula the engine implements.
    for (const char* key : {"attention_factor", "mscale", "mscale_all_dim", "extrapolation_factor", "truncate"})
      if (present(rs, key)) return make_error("config.json: rope_scaling.{} is not supported (YaRN with the default attention scale only)", key);
    out.metadata.set_string(arch + ".rope.scaling.type", "yarn");
    out.metadata.set_f32(arch + ".rope.scaling.factor", float(*factor));
    GLIA_ASSIGN(auto orig, positive_int(rs, "original_max_position_embeddings", false));
    if (orig) out.metadata.set_u32(arch + ".rope.scaling.original_context_length", uint32_t(*orig));
    for (auto [hf_key, gguf_key] : {std::pair{"beta_fast", "rope.scaling.yarn_beta_fast"}, std::pair{"beta_slow", "rope.scaling.yarn_beta_slow"}}) {
      if (!present(rs, hf_key)) continue;
      GLIA_ASSIGN(const double v, positive_number(rs, hf_key));
      out.metadata.set_f32(arch + "." + gguf_key, float(v));
    }
    return {};
  }
  if (type == "llama3") {
    // Only the llama architecture reads a rope_freqs tensor.
    if (arch != "llama") return make_error("config.json: rope_scaling type llama3 is not supported for {}", out.fam->hf_arch);
    llama3_rope_scaling s;
    s.factor = *factor;
    GLIA_ASSIGN(s.low_freq_factor, positive_number(rs, "low_freq_factor"));
    GLIA_ASSIGN(s.high_freq_factor, positive_number(rs, "high_freq_factor"));
    GLIA_ASSIGN(const int64_t orig, required_int(rs, "original_max_position_embeddings"));
    if (!(s.high_freq_factor > s.low_freq_factor))
      return make_error("config.json: rope_scaling's high_freq_factor ({}) must be greater than low_freq_factor ({})",
                        s.high_freq_factor, s.low_freq_factor);
    s.original_context = int(orig);
    out.rope_freq_factors = llama3_rope_factors(s, theta, int(head_dim));
    return {};
  }
  return make_error("config.json: rope_scaling type {} is not supported (linear, yarn, llama3)", type);
}

// Settings of real checkpoints that would change the forward in ways the GGUF architecture does not
// express: refused rather than silently run differently.
status refuse_unsupported(const json& given, const json& cfg, const family& fam) {
  if (present(given, "quantization_config")) {
    const json& q = given["quantization_config"];
    return make_error("config.json: a quantized checkpoint (quantization_config, method {}); glia reads F32, F16 and BF16 "
                      "checkpoints", q.is_object() && q.contains("quant_method") ? q["quant_method"].dump() : "unknown");
  }
  if (present(cfg, fam.activation_key)) {
    const json& act = cfg[std::string(fam.activation_key)];
    bool ok = false;
    for (std::string_view name : fam.activations) ok |= act.is_string() && act.get<std::string>() == name;
    if (!ok) return make_error("config.json: {} {} is not supported for {}", fam.activation_key, act.dump(), fam.hf_arch);
  }
  GLIA_ASSIGN(const bool sliding, flag(cfg, "use_sliding_window"));
  if (sliding) return make_error("config.json: use_sliding_window is true; sliding-window attention is not supported for {}", fam.hf_arch);
  GLIA_ASSIGN(const bool attention_bias, flag(cfg, "attention_bias"));
  if (attention_bias && !fam.qkv_bias)
    return make_error("config.json: attention_bias is true; attention biases are not supported for {}", fam.hf_arch);
  GLIA_ASSIGN(const bool mlp_bias, flag(cfg, "mlp_bias"));
  if (mlp_bias) return make_error("config.json: mlp_bias is true; FFN biases are not supported");
  GLIA_TRY(refuse_partial_rotary(cfg, ""));
  if (!fam.softcaps)
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (present(cfg, key)) return make_error("config.json: {} is set; softcapping is not supported for {}", key, fam.hf_arch);
  return {};
}

}  // namespace

result<json> parse_json_file(std::string_view text, std::string_view file_name) {
  if (const size_t depth = json_nesting_depth(text); depth > max_config_json_depth)
    return make_error("{}: nests {} levels deep; the limit is {}", file_name, depth, max_config_json_depth);
  if (const auto nul = json_nul_byte(text)) return make_error("{}: not valid JSON (a NUL byte at offset {})", file_name, *nul);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return make_error("{}: not valid JSON: {}", file_name, json_error_reason(e.what()));
  }
}

result<model_config> read_model_config(const json& config, const std::string& name) {
  if (!config.is_object()) return make_error("config.json: not a JSON object");
  model_config out;
  GLIA_ASSIGN(out.fam, find_family(config));
  json given = config;
  if (out.fam->text_config) {
    auto it = config.find("text_config");
    if (it == config.end() || !it->is_object())
      return make_error("config.json: {} keeps the language model's settings in \"text_config\", which is missing", out.fam->hf_arch);
    given = *it;
    if (present(config, "quantization_config")) given["quantization_config"] = config["quantization_config"];
  }
  out.text = json::parse(out.fam->defaults);
  for (const auto& [k, v] : given.items()) out.text[k] = v;
  const json& cfg = out.text;
  GLIA_TRY(refuse_unsupported(given, cfg, *out.fam));
  const std::string arch(out.fam->gguf_arch);
  gguf::writer& md = out.metadata;

  GLIA_ASSIGN(const int64_t n_embd, required_int(cfg, "hidden_size"));
  GLIA_ASSIGN(out.n_layer, required_int(cfg, "num_hidden_layers"));
  GLIA_ASSIGN(const int64_t n_ff, required_int(cfg, "intermediate_size"));
  GLIA_ASSIGN(const int64_t n_head, required_int(cfg, "num_attention_heads"));
  GLIA_ASSIGN(const int64_t n_ctx, required_int(cfg, "max_position_embeddings"));
  GLIA_ASSIGN(const std::optional<int64_t> n_head_kv, positive_int(cfg, "num_key_value_heads", false));
  GLIA_ASSIGN(const std::optional<int64_t> head_dim, positive_int(cfg, "head_dim", false));
  GLIA_ASSIGN(const double eps, positive_number(cfg, "rms_norm_eps"));
  GLIA_ASSIGN(const rope_settings rope, read_rope_settings(given, cfg));
  out.tied_given = present(given, "tie_word_embeddings");
  if (auto t = cfg.find("tie_word_embeddings"); t != cfg.end()) {
    if (!t->is_boolean()) return make_error("config.json: tie_word_embeddings must be true or false, found {}", t->dump());
    out.tied = t->get<bool>();
  }

  md.set_string("general.architecture", arch);
  // The folder's name (org/name in the Hugging Face cache) rather than _name_or_path, which is often
  // the path a fine-tune was saved from.
  md.set_string("general.name", name);
  md.set_u32(arch + ".context_length", uint32_t(n_ctx));
  md.set_u32(arch + ".embedding_length", uint32_t(n_embd));
  md.set_u32(arch + ".block_count", uint32_t(out.n_layer));
  md.set_u32(arch + ".feed_forward_length", uint32_t(n_ff));
  md.set_u32(arch + ".attention.head_count", uint32_t(n_head));
  md.set_u32(arch + ".attention.head_count_kv", uint32_t(n_head_kv.value_or(n_head)));
  md.set_f32(arch + ".attention.layer_norm_rms_epsilon", float(eps));
  md.set_f32(arch + ".rope.freq_base", float(rope.theta));
  if (head_dim) {
    md.set_u32(arch + ".attention.key_length", uint32_t(*head_dim));
    md.set_u32(arch + ".attention.value_length", uint32_t(*head_dim));
  }
  GLIA_TRY(read_rope_scaling(rope.scaling, head_dim.value_or(n_embd / n_head), rope.theta, out));
  if (out.fam->extra) GLIA_TRY(out.fam->extra(cfg, arch, md));
  if (rope.theta_local) {  // after extra, whose rope_local_base_freq (or its default) this replaces
    if (!out.fam->local_rope_base && *rope.theta_local != rope.theta)
      return make_error("config.json: a different RoPE base on sliding-window layers is not supported for {}", out.fam->hf_arch);
    if (out.fam->local_rope_base) md.set_f32(arch + ".rope.freq_base_swa", float(*rope.theta_local));
  }
  return out;
}

}  // namespace glia::hf
