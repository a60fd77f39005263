// config.json is whatever a user's folder holds: every key of real-looking configs set to hostile
// values (wrong types, zero, negative, huge, fractional) or removed must give a working model or a
// one-line error, never a crash, and a model that loads must run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "hf_export.h"
#include "model/forward.h"
#include "model/hf/hf_checkpoint.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "test_support.h"
#include "tokenizer/jinja/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace glia {
namespace {

using json = nlohmann::json;

hf::checkpoint_files read_export(const std::string& stem, const std::string& name, const test::hf_export_options& o) {
  const std::string dir = test::scratch("hf_hostile/" + name);
  EXPECT_TRUE(test::export_hf_checkpoint(test::testdata("models/" + stem + ".gguf"), dir, o).is_ok());
  hf::checkpoint_files files;
  files.name = name;
  files.config_json = test::read_text(dir + "/config.json");
  auto shard = safetensors::file::open(dir + "/model.safetensors");
  EXPECT_TRUE(shard.is_ok()) << shard.message();
  files.shards.emplace_back("model.safetensors", std::move(*shard));
  return files;
}

void expect_one_line(const std::string& msg, const std::string& what) {
  EXPECT_FALSE(msg.empty()) << what;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << what << ": " << msg;
}

// Loads the files; a model that loads runs a short prompt.
void load_and_run(const hf::checkpoint_files& files, backend& be, const std::string& what) {
  auto f = hf::translate(files);
  if (!f) return expect_one_line(f.message(), what);
  if (auto tok = tokenizer::from_gguf(**f); !tok) expect_one_line(tok.message(), what);
  if (auto set = jinja::load_chat_templates(**f); !set) expect_one_line(set.message(), what);
  auto m = load_model(*f);
  if (!m) return expect_one_line(m.message(), what);
  auto cache = kv_cache::create((*m)->profile, 8, 8, dtype::f32, be);
  if (!cache) return expect_one_line(cache.message(), what);
  forward_pass fwd(**m, be);
  const std::vector<int32_t> ids = {1, 2, 3};
  std::vector<float> logits;
  status s = fwd.run(*cache, ids, 0, false, logits);
  if (!s) expect_one_line(s.message(), what);
}

const json kHostile[] = {nullptr, -1, 0, 1, 3, 2048.5, 1e30, -1e30, 9223372036854775807LL, 4294967296LL, "x", json::array(),
                         json::object(), true};

TEST(hf_hostile_config, every_key_with_every_hostile_value) {
  struct source {
    const char* stem;
    const char* name;
    test::hf_export_options opts;
  };
  const source sources[] = {{"llama-untied-F16", "llama", {}},
                            {"qwen2-F16", "qwen2", {}},
                            {"gemma2-F16", "gemma2", {}},
                            {"gemma3-F16", "gemma3_mm", {.multimodal = true, .shards = 1}}};
  auto be = make_cpu_backend(2);
  int tried = 0;
  for (const auto& src : sources) {
    const hf::checkpoint_files base = read_export(src.stem, src.name, src.opts);
    const json config = json::parse(base.config_json);
    const bool nested = config.contains("text_config");
    const json& settings = nested ? config["text_config"] : config;
    std::vector<std::string> keys;
    for (const auto& [k, v] : settings.items()) keys.push_back(k);
    // And the keys these exports leave out that real configs carry.
    for (const char* k : {"rope_scaling", "rope_parameters", "mlp_bias", "attention_bias", "use_sliding_window", "hidden_act",
                          "hidden_activation", "quantization_config", "partial_rotary_factor", "layer_types",
                          "sliding_window_pattern", "query_pre_attn_scalar", "rope_local_base_freq", "attn_logit_softcapping",
                          "final_logit_softcapping", "eos_token_id", "tie_word_embeddings", "head_dim"})
      if (!settings.contains(k)) keys.push_back(k);
    for (const auto& key : keys) {
      auto with = [&](const std::optional<json>& value) {
        json c = config;
        json& target = nested ? c["text_config"] : c;
        if (value) target[key] = *value;
        else target.erase(key);
        hf::checkpoint_files files = base;
        files.config_json = c.dump();
        load_and_run(files, *be, std::string(src.name) + " " + key + " = " + (value ? value->dump() : "(removed)"));
        ++tried;
      };
      with(std::nullopt);
      for (const json& v : kHostile) with(v);
      for (const char* type : {"linear", "yarn", "llama3", "dynamic", "longrope", "default"})
        for (const json& factor : {json(-2.0), json(0), json(1e-30), json(1e30), json("8")}) {
          const json scaling = {{"rope_type", type}, {"factor", factor}, {"original_max_position_embeddings", 0},
                                {"low_freq_factor", 4}, {"high_freq_factor", 1}, {"rope_theta", factor}};
          if (key == "rope_scaling") with(scaling);
          if (key == "rope_parameters") {
            with(scaling);
            with(json{{"full_attention", scaling}, {"sliding_attention", scaling}});
            for (const json& v : kHostile) with(json{{"full_attention", v}, {"sliding_attention", v}});
          }
        }
    }
    // rope_parameters beside a hostile legacy rope_scaling.
    for (const json& v : kHostile) {
      json c = config;
      json& target = nested ? c["text_config"] : c;
      target["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
      target["rope_scaling"] = v;
      hf::checkpoint_files files = base;
      files.config_json = c.dump();
      load_and_run(files, *be, std::string(src.name) + " rope_parameters + rope_scaling = " + v.dump());
      ++tried;
    }
    // The side files, each hostile.
    for (const char* file : {"generation_config.json", "chat_template.json", "tokenizer_config.json", "tokenizer.json"}) {
      for (const json& v : kHostile) {
        for (const json& doc : {v, json{{"eos_token_id", v}, {"temperature", v}, {"top_k", v}, {"chat_template", v},
                                        {"repetition_penalty", v}, {"bos_token", v}, {"model", v}}}) {
          hf::checkpoint_files files = base;
          files.texts.emplace_back(file, doc.dump());
          load_and_run(files, *be, std::string(src.name) + " " + file + " = " + doc.dump());
          ++tried;
        }
      }
    }
    // The top level of a multimodal config too (architectures, text_config itself).
    for (const char* key : {"architectures", "text_config"}) {
      for (const json& v : kHostile) {
        json c = config;
        c[key] = v;
        hf::checkpoint_files files = base;
        files.config_json = c.dump();
        load_and_run(files, *be, std::string(src.name) + " " + key + " = " + v.dump());
        ++tried;
      }
    }
  }
  EXPECT_GT(tried, 500);

}

}  // namespace
}  // namespace glia
