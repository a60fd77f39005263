#include "hf_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fp16.h"
#include "gguf/gguf.h"
#include "quant/types.h"
#include "safetensors/safetensors.h"
#include "tokenizer/vocab_hf.h"

namespace glia::test {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::pair<const char*, const char*> kArchitectures[] = {
    {"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"},
    {"gemma", "GemmaForCausalLM"}, {"gemma2", "Gemma2ForCausalLM"}, {"gemma3", "Gemma3ForCausalLM"}};

// GGUF per-layer suffix -> transformers suffix.
std::string hf_suffix(const std::string& gguf, bool sandwich) {
  static const std::pair<const char*, const char*> plain[] = {
      {"attn_norm.weight", "input_layernorm.weight"}, {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"}, {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"}, {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"}, {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"}, {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"}};
  for (const auto& [g, h] : plain)
    if (gguf == g) return h;
  if (sandwich) {
    if (gguf == "post_attention_norm.weight") return "post_attention_layernorm.weight";
    if (gguf == "ffn_norm.weight") return "pre_feedforward_layernorm.weight";
    if (gguf == "post_ffw_norm.weight") return "post_feedforward_layernorm.weight";
  } else if (gguf == "ffn_norm.weight") {
    return "post_attention_layernorm.weight";
  }
  return {};
}

std::string hf_name(const std::string& gguf, bool sandwich) {
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return "lm_head.weight";
  if (!gguf.starts_with("blk.")) return {};
  const size_t dot = gguf.find('.', 4);
  const std::string suffix = hf_suffix(gguf.substr(dot + 1), sandwich);
  if (suffix.empty()) return {};
  return "model.layers." + gguf.substr(4, dot - 4) + "." + suffix;
}

json config_of(const gguf::file& f, const std::string& arch, bool tied, int64_t n_vocab) {
  auto i = [&](const std::string& k) { return f.get_int(arch + "." + k); };
  auto d = [&](const std::string& k) { return f.get_float(arch + "." + k); };
  json c;
  c["hidden_size"] = *i("embedding_length");
  c["num_hidden_layers"] = *i("block_count");
  c["intermediate_size"] = *i("feed_forward_length");
  c["num_attention_heads"] = *i("attention.head_count");
  c["num_key_value_heads"] = i("attention.head_count_kv").value_or(*i("attention.head_count"));
  c["max_position_embeddings"] = *i("context_length");
  c["rms_norm_eps"] = *d("attention.layer_norm_rms_epsilon");
  c["rope_theta"] = d("rope.freq_base").value_or(10000.0);
  c["vocab_size"] = n_vocab;
  c["tie_word_embeddings"] = tied;
  c["torch_dtype"] = "float16";
  const int64_t head_dim = i("attention.key_length").value_or(*i("embedding_length") / *i("attention.head_count"));
  if (i("attention.key_length")) c["head_dim"] = head_dim;
  if (auto type = f.get_string(arch + ".rope.scaling.type")) {
    // Older configs (Qwen2.5's YaRN ones among them) name the kind "type" rather than "rope_type".
    json rs = {{*type == "yarn" ? "type" : "rope_type", *type}, {"factor", *d("rope.scaling.factor")}};
    if (auto orig = i("rope.scaling.original_context_length")) rs["original_max_position_embeddings"] = *orig;
    c["rope_scaling"] = rs;
  }
  const int64_t n_layer = *i("block_count");
  auto layer_types = [&](int period) {
    json t = json::array();
    for (int64_t il = 0; il < n_layer; ++il) t.push_back((il + 1) % period ? "sliding_attention" : "full_attention");
    return t;
  };
  if (arch == "gemma2") {
    c["attn_logit_softcapping"] = *d("attn_logit_softcapping");
    c["final_logit_softcapping"] = *d("final_logit_softcapping");
    c["sliding_window"] = *i("attention.sliding_window");
    c["query_pre_attn_scalar"] = head_dim;
    c["layer_types"] = layer_types(2);
  }
  if (arch == "gemma3") {
    c["sliding_window"] = *i("attention.sliding_window");
    c["rope_local_base_freq"] = *d("rope.freq_base_swa");
    c["query_pre_attn_scalar"] = head_dim;
    c["sliding_window_pattern"] = 6;
    c["final_logit_softcapping"] = nullptr;
    c["attn_logit_softcapping"] = nullptr;
  }
  return c;
}

// transformers' Llama rotates halves of each head: HF row h*hd + j*hd/2 + i is GGUF row h*hd + 2i + j.
std::vector<uint8_t> unpermute_rows(const uint8_t* src, int64_t n_rows, size_t row_bytes, int64_t n_heads) {
  std::vector<uint8_t> out(size_t(n_rows) * row_bytes);
  const int64_t hd = n_rows / n_heads;
  for (int64_t r = 0; r < n_rows; ++r) {
    const int64_t h = r / hd, j = (r % hd) / (hd / 2), i = (r % hd) % (hd / 2);
    std::memcpy(out.data() + size_t(r) * row_bytes, src + size_t(h * hd + 2 * i + j) * row_bytes, row_bytes);
  }
  return out;
}

status write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  return out ? status{} : status{error{"cannot write " + p.string()}};
}

}  // namespace

status export_hf_checkpoint(const std::string& gguf_path, const std::string& dir, const hf_export_options& opts) {
  auto opened = gguf::file::open(gguf_path);
  if (!opened) return opened.take_error();
  const gguf::file& f = **opened;
  const std::string arch = *f.get_string("general.architecture");
  const char* hf_arch = nullptr;
  for (const auto& [g, h] : kArchitectures)
    if (arch == g) hf_arch = h;
  if (!hf_arch) return make_error("no Hugging Face class for {}", arch);
  const bool gemma = arch.starts_with("gemma");
  const bool sandwich = arch == "gemma2" || arch == "gemma3";
  const bool tied = f.find_tensor("output.weight") == nullptr;
  const int64_t n_vocab = f.find_tensor("token_embd.weight")->ne[1];
  const int64_t n_head = *f.get_int(arch + ".attention.head_count");
  const int64_t n_head_kv = f.get_int(arch + ".attention.head_count_kv").value_or(n_head);

  fs::remove_all(dir);
  fs::create_directories(dir);
  json config = config_of(f, arch, tied, n_vocab);
  if (!opts.rope_scaling.empty()) config["rope_scaling"] = json::parse(opts.rope_scaling);
  if (opts.v5_rope) {
    json global = config.contains("rope_scaling") ? config["rope_scaling"] : json{{"rope_type", "default"}};
    if (global.contains("type")) global["rope_type"] = global["type"], global.erase("type");
    global["rope_theta"] = config["rope_theta"];
    config.erase("rope_scaling");
    config.erase("rope_theta");
    if (config.contains("rope_local_base_freq")) {
      config["rope_parameters"] = {{"full_attention", global},
                                   {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", config["rope_local_base_freq"]}}}};
      config.erase("rope_local_base_freq");
    } else {
      config["rope_parameters"] = global;
    }
  }
  if (opts.multimodal) {
    config = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"}, {"text_config", config},
              {"vision_config", {{"hidden_size", 16}}}};
  } else {
    config["architectures"] = {opts.architecture.empty() ? std::string(hf_arch) : opts.architecture};
    config["model_type"] = arch;
  }
  if (!opts.config_patch.empty()) config.merge_patch(json::parse(opts.config_patch));
  GLIA_TRY(write_text(fs::path(dir) / "config.json", config.dump(2)));

  std::vector<safetensors::writer> shards(size_t(std::max(1, opts.shards)));
  json weight_map = json::object();
  size_t k = 0;
  auto shard_name = [&](size_t s) {
    return shards.size() == 1 ? std::string("model.safetensors")
                              : fmt::format("model-{:05}-of-{:05}.safetensors", s + 1, shards.size());
  };
  for (const auto& t : f.tensors()) {
    if (t.name == "rope_freqs.weight" && !opts.rope_scaling.empty()) continue;  // config.json says how to compute it
    const std::string name = hf_name(t.name, sandwich);
    if (name.empty()) return make_error("no Hugging Face name for {}", t.name);
    std::vector<int64_t> shape(t.ne, t.ne + t.n_dims);
    std::reverse(shape.begin(), shape.end());
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    safetensors::dtype type;
    if (t.type == uint32_t(dtype::f32)) type = safetensors::dtype::f32;
    else if (t.type == uint32_t(dtype::f16)) type = safetensors::dtype::f16;
    else return make_error("{}: only F32/F16 models export", t.name);
    if ((opts.bf16 && t.n_dims == 2) || (opts.bf16_vectors && t.n_dims == 1)) {
      std::vector<float> f(size_t(t.n_elements()));
      find_type(t.type)->dequantize_row(t.data, f.data(), t.n_elements());
      bytes.resize(f.size() * 2);
      for (size_t e = 0; e < f.size(); ++e) {
        const uint16_t b = f32_to_bf16(f[e]);
        std::memcpy(bytes.data() + 2 * e, &b, 2);
      }
      type = safetensors::dtype::bf16;
    }
    const bool is_q = t.name.ends_with("attn_q.weight") || t.name.ends_with("attn_q.bias");
    const bool is_k = t.name.ends_with("attn_k.weight") || t.name.ends_with("attn_k.bias");
    if (arch == "llama" && (is_q || is_k)) {
      const int64_t rows = t.n_dims == 1 ? t.ne[0] : t.ne[1];
      bytes = unpermute_rows(bytes.data(), rows, bytes.size() / size_t(rows), is_q ? n_head : n_head_kv);
    }
    if (gemma && t.name.ends_with("norm.weight")) {  // transformers' Gemma norms multiply by 1 + w
      for (int64_t e = 0; e < t.n_elements(); ++e) {
        if (type == safetensors::dtype::f32) {
          reinterpret_cast<float*>(bytes.data())[e] -= 1.0f;
        } else {
          uint16_t b;
          std::memcpy(&b, bytes.data() + 2 * e, 2);
          b = f32_to_bf16(bf16_to_f32(b) - 1.0f);
          std::memcpy(bytes.data() + 2 * e, &b, 2);
        }
      }
    }
    std::string full = name;
    if (opts.multimodal && opts.new_names) full = name.starts_with("model.") ? "model.language_model." + name.substr(6) : name;
    else if (opts.multimodal) full = "language_model." + name;  // transformers < 4.52
    const size_t s = k++ % shards.size();
    GLIA_TRY(shards[s].add(full, type, shape, bytes));
    weight_map[full] = shard_name(s);
  }
  if (opts.multimodal) {
    // Tensors of the vision tower, which the language model loader leaves out.
    std::vector<uint8_t> zeros(16 * 4 * 2, 0);
    GLIA_TRY(shards[0].add("vision_tower.vision_model.embeddings.patch_embedding.weight", safetensors::dtype::bf16, {16, 4}, zeros));
    weight_map["vision_tower.vision_model.embeddings.patch_embedding.weight"] = shard_name(0);
  }
  for (size_t s = 0; s < shards.size(); ++s) GLIA_TRY(shards[s].write((fs::path(dir) / shard_name(s)).string()));
  if (shards.size() > 1)
    GLIA_TRY(write_text(fs::path(dir) / "model.safetensors.index.json", json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump(2)));

  if (!opts.tokenizer_dir.empty()) {
    const fs::path src(opts.tokenizer_dir);
    auto tok = tok::read_file_maybe_gz((fs::exists(src / "tokenizer.json") ? src / "tokenizer.json" : src / "tokenizer.json.gz").string());
    if (!tok) return tok.take_error();
    GLIA_TRY(write_text(fs::path(dir) / "tokenizer.json", *tok));
    if (fs::exists(src / "tokenizer_config.json")) fs::copy_file(src / "tokenizer_config.json", fs::path(dir) / "tokenizer_config.json");
  }
  return {};
}

}  // namespace glia::test
