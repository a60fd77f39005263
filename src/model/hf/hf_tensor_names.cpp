#include "model/hf/hf_tensor_names.h"

#include <charconv>
#include <regex>

#include <fmt/format.h>

namespace glia::hf {

namespace {

struct suffix_map {
  std::string_view hf, gguf;
};

// Per-layer names after "model.layers.<i>.".
constexpr suffix_map kLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};
// Families with Q/K/V biases (an o_proj bias has no GGUF counterpart the engine reads).
constexpr suffix_map kBias[] = {
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
};
constexpr suffix_map kSandwich[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};
constexpr suffix_map kPlain[] = {{"post_attention_layernorm.weight", "ffn_norm.weight"}};
constexpr suffix_map kTop[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// A multimodal checkpoint's language model: "language_model.model.*" (transformers < 4.52) or
// "model.language_model.*", with the head at "language_model.lm_head.*" or "lm_head.*".
std::optional<std::string> text_model_name(std::string_view name) {
  for (std::string_view p : {"language_model.model.", "model.language_model."})
    if (name.starts_with(p)) return "model." + std::string(name.substr(p.size()));
  if (name.starts_with("language_model.lm_head.")) return std::string(name.substr(std::string_view("language_model.").size()));
  if (name.starts_with("lm_head.")) return std::string(name);
  return std::nullopt;
}

}  // namespace

std::optional<mapped_name> map_tensor_name(std::string_view hf_name, const family& fam) {
  std::string name(hf_name);
  if (fam.text_config) {
    auto text = text_model_name(hf_name);
    if (!text) return mapped_name{name_kind::skipped, {}};  // vision tower, projector
    name = std::move(*text);
  }
  if (name.ends_with(".rotary_emb.inv_freq")) return mapped_name{name_kind::skipped, {}};
  for (const auto& m : kTop)
    if (name == m.hf) return mapped_name{name_kind::weight, std::string(m.gguf)};
  constexpr std::string_view layers = "model.layers.";
  if (!name.starts_with(layers)) return std::nullopt;
  std::string_view rest = std::string_view(name).substr(layers.size());
  unsigned il = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), il);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '.') return std::nullopt;
  // transformers matches module names exactly: "model.layers.01" is not layer 1.
  if (end - rest.data() > 1 && rest[0] == '0') return std::nullopt;
  const std::string_view suffix(end + 1, size_t(rest.data() + rest.size() - end - 1));
  auto lookup = [&](std::span<const suffix_map> table) -> std::optional<mapped_name> {
    for (const auto& m : table)
      if (suffix == m.hf) return mapped_name{name_kind::weight, "blk." + std::to_string(il) + "." + std::string(m.gguf), il};
    return std::nullopt;
  };
  if (auto m = lookup(kLayer)) return m;
  if (fam.qkv_bias)
    if (auto m = lookup(kBias)) return m;
  return fam.sandwich_norms ? lookup(kSandwich) : lookup(kPlain);
}

std::string checkpoint_tensor_name(std::string_view gguf_name, std::string_view gguf_arch) {
  for (const auto& m : kTop)
    if (gguf_name == m.gguf) return std::string(m.hf);
  constexpr std::string_view blk = "blk.";
  if (!gguf_name.starts_with(blk)) return {};
  const size_t dot = gguf_name.find('.', blk.size());
  if (dot == std::string_view::npos) return {};
  const std::string_view layer = gguf_name.substr(blk.size(), dot - blk.size());
  const std::string_view suffix = gguf_name.substr(dot + 1);
  const bool sandwich = gguf_arch == "gemma2" || gguf_arch == "gemma3";
  for (std::span<const suffix_map> table : {std::span<const suffix_map>(kLayer), std::span<const suffix_map>(kBias),
                                            sandwich ? std::span<const suffix_map>(kSandwich) : std::span<const suffix_map>(kPlain)})
    for (const auto& m : table)
      if (suffix == m.gguf) return "model.layers." + std::string(layer) + "." + std::string(m.hf);
  return {};
}

// The config.json keys the translation writes the architecture's GGUF keys from (hf_config.cpp).
constexpr std::pair<std::string_view, std::string_view> kConfigKeys[] = {
    {"block_count", "num_hidden_layers"},
    {"embedding_length", "hidden_size"},
    {"feed_forward_length", "intermediate_size"},
    {"attention.head_count", "num_attention_heads"},
    {"attention.head_count_kv", "num_key_value_heads"},
    {"attention.key_length", "head_dim"},
    {"attention.value_length", "head_dim"},
    {"context_length", "max_position_embeddings"},
    {"rope.freq_base", "rope_theta"},
    {"attention.layer_norm_rms_epsilon", "rms_norm_eps"},
    {"attention.sliding_window", "sliding_window"},
};

std::string in_checkpoint_terms(const std::string& message, const gguf::file& f) {
  if (!f.is_assembled()) return {};
  std::smatch match;
  // A value of config.json, checked under the GGUF key it became.
  static const std::regex metadata_key(R"(metadata key ([a-z0-9]+\.([a-z_.]+[a-z])))");
  if (std::regex_search(message, match, metadata_key)) {
    for (const auto& [gguf_key, hf_key] : kConfigKeys)
      if (match[2].str() == gguf_key) return fmt::format(" ({} is config.json's {})", match[1].str(), hf_key);
    return {};
  }
  static const std::regex gguf_name(R"((blk\.\d+\.[a-z_]+\.(weight|bias)|token_embd\.weight|output_norm\.weight|output\.weight))");
  if (!std::regex_search(message, match, gguf_name)) return {};
  const std::string hf_name = checkpoint_tensor_name(match.str(), f.get_string("general.architecture").value_or(""));
  if (hf_name.empty()) return {};
  // The note on the order is for a matrix's shape (one found or expected), not a vector's.
  static const std::regex matrix_shape(R"(shape \[\d+, \d+)");
  return fmt::format(" ({} is the checkpoint's {}{})", match.str(), hf_name,
                     std::regex_search(message, matrix_shape) ? ", whose shape lists the dimensions in reverse order" : "");
}

}  // namespace glia::hf
