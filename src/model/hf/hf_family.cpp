#include "model/hf/hf_family.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <fmt/ranges.h>

namespace glia::hf {

namespace {

// config.json's sliding_window, when not null.
status sliding_window(const json& cfg, std::string_view arch, gguf::writer& md) {
  auto w = cfg.find("sliding_window");
  if (w == cfg.end() || w->is_null()) return {};
  // (an unsigned value past INT64_MAX reads as negative)
  if (!w->is_number_integer() || w->get<int64_t>() < 1 || w->get<int64_t>() > INT32_MAX)
    return make_error("config.json: sliding_window must be an integer from 1 to {}, found {}", INT32_MAX, w->dump());
  md.set_u32(fmt::format("{}.attention.sliding_window", arch), uint32_t(w->get<int64_t>()));
  return {};
}

// "layer_types" (transformers 4.53+) names each layer's attention; GGUF carries it as a per-layer
// bool array of sliding layers. An older config's "sliding_window_pattern" is the period instead.
status sliding_pattern(const json& cfg, std::string_view arch, gguf::writer& md) {
  const std::string key = fmt::format("{}.attention.sliding_window_pattern", arch);
  if (auto it = cfg.find("layer_types"); it != cfg.end() && !it->is_null()) {
    if (!it->is_array() || (cfg.contains("num_hidden_layers") && cfg["num_hidden_layers"].is_number_integer() &&
                            it->size() != cfg["num_hidden_layers"].get<uint64_t>()))
      return make_error("config.json: layer_types must list one entry per layer (num_hidden_layers), found {} entries",
                        it->is_array() ? std::to_string(it->size()) : it->dump());
    gguf::value v;
    v.type = gguf::value_type::array;
    v.elem_type = gguf::value_type::boolean;
    std::vector<gguf::value> items;
    for (const auto& t : *it) {
      if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
        return make_error("config.json: layer_types entries must be \"sliding_attention\" or \"full_attention\", found {}", t.dump());
      gguf::value b;
      b.type = gguf::value_type::boolean;
      b.data = t == "sliding_attention";
      items.push_back(std::move(b));
    }
    v.data = std::move(items);
    md.set(key, std::move(v));
  } else if (auto p = cfg.find("sliding_window_pattern"); p != cfg.end() && !p->is_null()) {
    if (!p->is_number_integer() || p->get<int64_t>() < 1 || p->get<int64_t>() > std::numeric_limits<int32_t>::max())
      return make_error("config.json: sliding_window_pattern must be a positive integer (at most 2^31 - 1), found {}", p->dump());
    md.set_u32(key, uint32_t(p->get<int64_t>()));
  }
  return sliding_window(cfg, arch, md);
}

// Queries are scaled by query_pre_attn_scalar^-1/2 rather than head_dim^-1/2.
status query_scale(const json& cfg, std::string_view arch, gguf::writer& md) {
  auto it = cfg.find("query_pre_attn_scalar");
  if (it == cfg.end() || it->is_null()) return {};
  if (!it->is_number() || !(it->get<double>() > 0))
    return make_error("config.json: query_pre_attn_scalar must be a positive number, found {}", it->dump());
  md.set_f32(fmt::format("{}.attention.scale", arch), float(1.0 / std::sqrt(it->get<double>())));
  return {};
}

// A softcap that is null in config.json is off (0 in GGUF, where a missing key means the default).
status softcap(const json& cfg, std::string_view hf_key, const std::string& gguf_key, gguf::writer& md) {
  auto it = cfg.find(hf_key);
  if (it == cfg.end()) return {};
  if (!it->is_null() && !(it->is_number() && it->get<double>() >= 0))
    return make_error("config.json: {} must be a non-negative number or null, found {}", hf_key, it->dump());
  md.set_f32(gguf_key, it->is_null() ? 0.0f : float(it->get<double>()));
  return {};
}

status gemma2_extra(const json& cfg, std::string_view arch, gguf::writer& md) {
  GLIA_TRY(sliding_pattern(cfg, arch, md));
  GLIA_TRY(query_scale(cfg, arch, md));
  GLIA_TRY(softcap(cfg, "attn_logit_softcapping", fmt::format("{}.attn_logit_softcapping", arch), md));
  return softcap(cfg, "final_logit_softcapping", fmt::format("{}.final_logit_softcapping", arch), md);
}

status gemma3_extra(const json& cfg, std::string_view arch, gguf::writer& md) {
  GLIA_TRY(sliding_pattern(cfg, arch, md));
  GLIA_TRY(query_scale(cfg, arch, md));
  if (auto it = cfg.find("rope_local_base_freq"); it != cfg.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() > 0))
      return make_error("config.json: rope_local_base_freq must be a positive number, found {}", it->dump());
    md.set_f32(fmt::format("{}.rope.freq_base_swa", arch), float(it->get<double>()));
  }
  return {};
}

// Defaults from transformers' LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, GemmaConfig,
// Gemma2Config and Gemma3TextConfig.
constexpr std::string_view llama_defaults = R"({"max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": false})";
constexpr std::string_view mistral_defaults = R"({"max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "num_key_value_heads": 8, "tie_word_embeddings": false, "sliding_window": 4096})";
constexpr std::string_view qwen2_defaults = R"({"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "num_key_value_heads": 32, "tie_word_embeddings": false})";
constexpr std::string_view qwen3_defaults = R"({"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "head_dim": 128, "num_key_value_heads": 32, "tie_word_embeddings": false})";
constexpr std::string_view gemma_defaults = R"({"max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "head_dim": 256, "num_key_value_heads": 16, "tie_word_embeddings": true})";
constexpr std::string_view gemma2_defaults = R"({"max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "head_dim": 256, "num_key_value_heads": 4, "tie_word_embeddings": true, "query_pre_attn_scalar": 256, "sliding_window": 4096, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0})";
constexpr std::string_view gemma3_defaults = R"({"max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "head_dim": 256, "num_attention_heads": 8, "num_key_value_heads": 4, "tie_word_embeddings": true, "query_pre_attn_scalar": 256, "sliding_window": 4096, "sliding_window_pattern": 6, "rope_local_base_freq": 10000.0})";

constexpr std::string_view silu[] = {"silu"};
constexpr std::string_view gelu_tanh[] = {"gelu_pytorch_tanh"};

const family kFamilies[] = {
    {.hf_arch = "LlamaForCausalLM", .gguf_arch = "llama", .mark_qk_checkpoint_order = true, .activations = silu, .defaults = llama_defaults},
    // Mistral 7B v0.1 attends over a sliding window on every layer (later versions say null; the
    // model reads no layer_types or pattern): run as transformers runs it, where llama.cpp's converter
    // drops the window and attends to everything.
    {.hf_arch = "MistralForCausalLM", .gguf_arch = "llama", .mark_qk_checkpoint_order = true, .activations = silu,
     .defaults = mistral_defaults, .extra = sliding_window},
    {.hf_arch = "Qwen2ForCausalLM", .gguf_arch = "qwen2", .activations = silu, .qkv_bias = true, .defaults = qwen2_defaults},
    {.hf_arch = "Qwen3ForCausalLM", .gguf_arch = "qwen3", .activations = silu, .defaults = qwen3_defaults},
    {.hf_arch = "GemmaForCausalLM", .gguf_arch = "gemma", .norm_plus_one = true, .activation_key = "hidden_activation",
     .activations = gelu_tanh, .defaults = gemma_defaults},
    {.hf_arch = "Gemma2ForCausalLM", .gguf_arch = "gemma2", .norm_plus_one = true, .sandwich_norms = true,
     .activation_key = "hidden_activation", .activations = gelu_tanh, .softcaps = true, .defaults = gemma2_defaults,
     .extra = gemma2_extra},
    {.hf_arch = "Gemma3ForCausalLM", .gguf_arch = "gemma3", .norm_plus_one = true, .sandwich_norms = true,
     .activation_key = "hidden_activation", .activations = gelu_tanh, .local_rope_base = true, .defaults = gemma3_defaults,
     .extra = gemma3_extra},
    {.hf_arch = "Gemma3ForConditionalGeneration", .gguf_arch = "gemma3", .norm_plus_one = true, .sandwich_norms = true,
     .text_config = true, .activation_key = "hidden_activation", .activations = gelu_tanh, .local_rope_base = true,
     .defaults = gemma3_defaults, .extra = gemma3_extra},
};

}  // namespace

result<const family*> find_family(const json& config) {
  std::vector<std::string_view> supported;
  for (const family& f : kFamilies) supported.push_back(f.hf_arch);
  auto it = config.find("architectures");
  if (it == config.end() || !it->is_array() || it->empty() || !(*it)[0].is_string())
    return make_error("config.json: \"architectures\" must name the model class (supported: {})", fmt::join(supported, ", "));
  const std::string name = (*it)[0].get<std::string>();
  for (const family& f : kFamilies)
    if (f.hf_arch == name) return &f;
  return make_error("config.json: architecture {} is not supported (supported: {})", name, fmt::join(supported, ", "));
}

}  // namespace glia::hf
