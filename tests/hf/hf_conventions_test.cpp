// The checkpoint conventions against answers worked out from their definitions rather than from our
// exporter: llama.cpp's converter reorders Llama Q/K rows (glia does when writing a GGUF) with
//   w.reshape(n_head, 2, rows // n_head // 2, cols).swapaxes(1, 2)
// so with one head of 8 rows, checkpoint rows 0..7 become GGUF rows 0 4 1 5 2 6 3 7, and with two
// heads of 4 rows, 0 2 1 3 4 6 5 7; transformers' Gemma RMSNorm multiplies by (1 + w), which GGUF
// stores as the weight itself.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>

#include "model/hf/hf_checkpoint.h"
#include "model/rope_rows.h"

namespace glia {
namespace {

using json = nlohmann::json;

// A one-layer checkpoint whose q_proj/k_proj row r holds the value r in every column.
struct tiny_checkpoint {
  std::vector<uint8_t> bytes;
  hf::checkpoint_files files;

  tiny_checkpoint(const char* arch, int n_head, int n_head_kv, float norm) {
    constexpr int64_t hidden = 8;
    const int64_t hd = hidden / n_head;
    safetensors::writer w;
    auto rows = [&](const std::string& name, int64_t n_rows) {
      std::vector<float> v(size_t(n_rows * hidden));
      for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t c = 0; c < hidden; ++c) v[size_t(r * hidden + c)] = float(r);
      EXPECT_TRUE(w.add(name, safetensors::dtype::f32, {n_rows, hidden}, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4}).is_ok());
    };
    rows("model.layers.0.self_attn.q_proj.weight", n_head * hd);
    rows("model.layers.0.self_attn.k_proj.weight", n_head_kv * hd);
    std::vector<float> n(hidden, norm);
    EXPECT_TRUE(w.add("model.layers.0.input_layernorm.weight", safetensors::dtype::f32, {hidden},
                      {reinterpret_cast<const uint8_t*>(n.data()), n.size() * 4}).is_ok());
    bytes = *w.to_bytes();
    auto f = safetensors::file::from_memory(bytes);
    EXPECT_TRUE(f.is_ok()) << f.message();
    files.name = "tiny";
    files.config_json = json{{"architectures", {arch}}, {"hidden_size", hidden}, {"num_hidden_layers", 1},
                             {"intermediate_size", 8}, {"num_attention_heads", n_head}, {"num_key_value_heads", n_head_kv},
                             {"max_position_embeddings", 64}, {"head_dim", hd}, {"tie_word_embeddings", true}}.dump();
    files.shards.emplace_back("model.safetensors", std::move(*f));
  }
};

std::vector<float> first_column(const gguf::file& f, const std::string& name) {
  const gguf::tensor_info* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  std::vector<float> out;
  if (!t) return out;
  for (int64_t r = 0; r < t->ne[1]; ++r) {
    float v;
    std::memcpy(&v, t->data + size_t(r * t->ne[0]) * 4, 4);
    out.push_back(v);
  }
  return out;
}

// A folder's Llama Q/K rows are used in place (NeoX rotation, marked in the metadata); quantize
// writes them in the converter's order.
TEST(hf_conventions, llama_q_and_k_rows_stay_in_checkpoint_order_and_are_marked) {
  tiny_checkpoint one_head("LlamaForCausalLM", 1, 1, 1.0f);
  auto f = hf::translate(one_head.files);
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_EQ(first_column(**f, "blk.0.attn_q.weight"), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ((*f)->get_bool(key_rope_checkpoint_order), true);
  // Used in place: the tensor is the shard's bytes, not a copy.
  const auto& shard = *one_head.files.shards[0].second;
  const uint8_t* q = (*f)->find_tensor("blk.0.attn_q.weight")->data;
  EXPECT_TRUE(q >= shard.bytes().data() && q < shard.bytes().data() + shard.bytes().size());
}

TEST(hf_conventions, interleaving_takes_the_converters_order) {
  auto column = [](int64_t n_rows, int64_t n_heads) {
    std::vector<float> in(static_cast<size_t>(n_rows)), out_f(static_cast<size_t>(n_rows));
    for (int64_t r = 0; r < n_rows; ++r) in[size_t(r)] = float(r);
    std::vector<uint8_t> out;
    auto s = interleave_rope_rows({reinterpret_cast<const uint8_t*>(in.data()), in.size() * 4}, out, n_rows, n_heads, "t");
    EXPECT_TRUE(s.is_ok()) << s.message();
    std::memcpy(out_f.data(), out.data(), out.size());
    return out_f;
  };
  EXPECT_EQ(column(8, 1), (std::vector<float>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(column(8, 2), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  std::vector<uint8_t> out;
  const std::vector<uint8_t> six(24);
  auto s = interleave_rope_rows(six, out, 6, 2, "blk.0.attn_q.weight");  // heads of 3 rows
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("6 rows do not split into 2 heads of an even size"), std::string::npos) << s.message();
}

TEST(hf_conventions, only_llama_checkpoints_are_marked) {
  tiny_checkpoint qwen("Qwen3ForCausalLM", 1, 1, 1.0f);
  auto f = hf::translate(qwen.files);
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_EQ(first_column(**f, "blk.0.attn_q.weight"), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE((*f)->get_bool(key_rope_checkpoint_order).has_value());
}

// MistralConfig's sliding_window defaults to 4096 (Mistral 7B v0.1); null (v0.2 on) turns it off.
// LlamaConfig has none, so a Llama config's key means nothing.
TEST(hf_conventions, mistral_sliding_window_as_transformers_reads_it) {
  auto window_of = [](const char* arch, const json& patch) -> std::optional<int64_t> {
    tiny_checkpoint t(arch, 1, 1, 1.0f);
    json c = json::parse(t.files.config_json);
    c.merge_patch(patch);
    if (patch.contains("sliding_window") && patch["sliding_window"].is_null()) c["sliding_window"] = nullptr;
    t.files.config_json = c.dump();
    auto f = hf::translate(t.files);
    EXPECT_TRUE(f.is_ok()) << f.message();
    return f.is_ok() ? (*f)->get_int("llama.attention.sliding_window") : std::nullopt;
  };
  EXPECT_EQ(window_of("MistralForCausalLM", json::object()), 4096);
  EXPECT_EQ(window_of("MistralForCausalLM", {{"sliding_window", 32}}), 32);
  EXPECT_EQ(window_of("MistralForCausalLM", {{"sliding_window", nullptr}}), std::nullopt);
  EXPECT_EQ(window_of("LlamaForCausalLM", {{"sliding_window", 32}}), std::nullopt);
  // MistralForCausalLM reads no layer pattern: the window is on every layer.
  tiny_checkpoint patterned("MistralForCausalLM", 1, 1, 1.0f);
  json pc = json::parse(patterned.files.config_json);
  pc["sliding_window_pattern"] = 2;
  pc["layer_types"] = {"full_attention"};
  patterned.files.config_json = pc.dump();
  auto pf = hf::translate(patterned.files);
  ASSERT_TRUE(pf.is_ok()) << pf.message();
  EXPECT_EQ(pf.value()->find("llama.attention.sliding_window_pattern"), nullptr);
  EXPECT_EQ(pf.value()->get_int("llama.attention.sliding_window"), 4096);
  for (const json& w : {json(0), json(-1), json(uint64_t(1) << 32 | 1), json(2147483648LL), json(UINT64_MAX), json("4096")}) {
    tiny_checkpoint bad("MistralForCausalLM", 1, 1, 1.0f);
    json c = json::parse(bad.files.config_json);
    c["sliding_window"] = w;
    bad.files.config_json = c.dump();
    auto f = hf::translate(bad.files);
    ASSERT_FALSE(f.is_ok()) << w.dump();
    EXPECT_NE(f.message().find("sliding_window must be an integer from 1 to 2147483647, found " + w.dump()), std::string::npos)
        << f.message();
  }
  // A pattern past 32 bits was cut to them (2^32 + 2 read as 2, 2^40 as 0: every layer full).
  for (const json& p : {json(0), json((uint64_t(1) << 32) + 2), json(uint64_t(1) << 40)}) {
    tiny_checkpoint bad("Gemma3ForCausalLM", 1, 1, 0.0f);
    json c = json::parse(bad.files.config_json);
    c.erase("layer_types");
    c["sliding_window_pattern"] = p;
    bad.files.config_json = c.dump();
    auto f = hf::translate(bad.files);
    ASSERT_FALSE(f.is_ok()) << p.dump();
    EXPECT_NE(f.message().find("sliding_window_pattern must be a positive integer (at most 2^31 - 1), found " + p.dump()),
              std::string::npos)
        << f.message();
  }
}

TEST(hf_conventions, gemma_norms_are_one_plus_the_stored_weight) {
  tiny_checkpoint gemma("GemmaForCausalLM", 1, 1, 0.25f);
  auto f = hf::translate(gemma.files);
  ASSERT_TRUE(f.is_ok()) << f.message();
  const gguf::tensor_info* t = (*f)->find_tensor("blk.0.attn_norm.weight");
  ASSERT_NE(t, nullptr);
  float v;
  std::memcpy(&v, t->data, 4);
  EXPECT_EQ(v, 1.25f);
  tiny_checkpoint llama("LlamaForCausalLM", 1, 1, 0.25f);
  f = hf::translate(llama.files);
  ASSERT_TRUE(f.is_ok());
  std::memcpy(&v, (*f)->find_tensor("blk.0.attn_norm.weight")->data, 4);
  EXPECT_EQ(v, 0.25f);
}

// transformers 5 keeps Gemma 3's two RoPE bases in rope_parameters, one per layer type.
TEST(hf_conventions, gemma3_rope_parameters_per_layer_type) {
  tiny_checkpoint gemma("Gemma3ForCausalLM", 1, 1, 0.0f);
  json c = json::parse(gemma.files.config_json);
  c["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 20000.0}}}};
  gemma.files.config_json = c.dump();
  auto f = hf::translate(gemma.files);
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_EQ((*f)->get_float("gemma3.rope.freq_base"), 1000000.0);
  EXPECT_EQ((*f)->get_float("gemma3.rope.freq_base_swa"), 20000.0);
  EXPECT_EQ((*f)->get_string("gemma3.rope.scaling.type"), "linear");
  c["layer_types"] = {"sliding_attention", "full_attention"};  // two entries for one layer
  gemma.files.config_json = c.dump();
  f = hf::translate(gemma.files);
  ASSERT_FALSE(f.is_ok());
  EXPECT_NE(f.message().find("config.json: layer_types must list one entry per layer"), std::string::npos) << f.message();
}

// generation_config.json's settings that differ from transformers' defaults become general.sampling.*.
TEST(hf_conventions, generation_config_sampling_defaults) {
  tiny_checkpoint llama("LlamaForCausalLM", 1, 1, 1.0f);
  llama.files.texts.emplace_back("generation_config.json",
                                 R"({"temperature": 0.6, "top_k": 50, "top_p": 0.95, "repetition_penalty": 1.05, "eos_token_id": [2, 7]})");
  auto f = hf::translate(llama.files);
  ASSERT_TRUE(f.is_ok()) << f.message();
  EXPECT_FLOAT_EQ(float(*(*f)->get_float("general.sampling.temp")), 0.6f);
  EXPECT_FALSE((*f)->get_int("general.sampling.top_k"));  // 50 is transformers' default: not the model's choice
  EXPECT_FLOAT_EQ(float(*(*f)->get_float("general.sampling.top_p")), 0.95f);
  EXPECT_FLOAT_EQ(float(*(*f)->get_float("general.sampling.penalty_repeat")), 1.05f);
}

}  // namespace
}  // namespace glia
