// Hugging Face checkpoints exported from the pack's GGUF models (hf_export.h) load into the same
// model: their logits match llama.cpp's golden ones for the GGUF within the same tolerances.
#include <gtest/gtest.h>

#include "../golden/golden_pack.h"
#include "hf_export.h"

namespace glia {
namespace {

struct hf_case {
  const char* name;
  const char* stem;
  test::hf_export_options opts;
  const char* tolerance_stem = nullptr;  // the tolerance class when the export rounds weights (BF16)
};

const hf_case kCases[] = {
    {"brown_f32", "brown-f32", {}},  // real weights: a wrong Q/K order shows at once
    {"llama_untied", "llama-untied-F16", {}},
    {"llama_untied_2_shards", "llama-untied-F16", {.shards = 2}},
    {"llama_yarn", "llama-rope-yarn-F16", {}},
    // The pack's rope_freqs tensor is Llama 3.1's formula with these parameters (the transition of its
    // 32 divisors from 1 to 8 fixes them); the loader computes the tensor from config.json.
    {"llama3_rope",
     "llama-rope-llama3-F16",
     {.rope_scaling = R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 64})"}},
    {"qwen2", "qwen2-F16", {}},
    {"qwen3", "qwen3-F16", {}},
    {"gemma", "gemma-F16", {}},
    {"gemma2", "gemma2-F16", {}},
    {"gemma3", "gemma3-F16", {}},
    {"gemma3_multimodal_3_shards", "gemma3-F16", {.multimodal = true, .shards = 3}},
    {"gemma3_multimodal_new_names", "gemma3-F16", {.multimodal = true, .new_names = true}},
    {"mistral", "llama-untied-F16", {.architecture = "MistralForCausalLM"}},
    // transformers 5's rope_parameters: flat, per layer type (Gemma 3), and carrying llama3 scaling.
    {"qwen3_rope_parameters", "qwen3-F16", {.v5_rope = true}},
    {"gemma3_rope_parameters", "gemma3-F16", {.v5_rope = true}},
    {"llama_yarn_rope_parameters", "llama-rope-yarn-F16", {.v5_rope = true}},
    {"llama3_rope_parameters",
     "llama-rope-llama3-F16",
     {.v5_rope = true,
      .rope_scaling = R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 64})"}},
    // Everything in BF16, norms included (Gemma's 1 + w on BF16 weights): within the pack's BF16 bound.
    {"gemma3_all_bf16", "gemma3-F16", {.bf16 = true, .bf16_vectors = true}, "llama-h160-BF16"},
    {"qwen2_all_bf16", "qwen2-F16", {.bf16 = true, .bf16_vectors = true}, "llama-h160-BF16"},
};

void PrintTo(const hf_case& c, std::ostream* os) { *os << c.name; }

class hf_golden : public ::testing::TestWithParam<hf_case> {};

TEST_P(hf_golden, logits_match_llama_cpp_on_the_gguf) {
  const hf_case& c = GetParam();
  const std::string dir = test::scratch(std::string("hf_golden/") + c.name);
  status s = test::export_hf_checkpoint(test::testdata(std::string("models/") + c.stem + ".gguf"), dir, c.opts);
  ASSERT_TRUE(s.is_ok()) << s.message();
  auto m = load_model(dir);
  ASSERT_TRUE(m.is_ok()) << m.message();
  const auto g = test::read_golden(c.stem);
  auto be = make_cpu_backend(2);
  float worst = 0.0f;
  test::expect_golden_logits(**m, g, test::tolerance_for(c.tolerance_stem ? c.tolerance_stem : c.stem), *be, 512,
                             dtype::f32, false, worst);
  std::printf("[ %s ] max abs deviation %.6f\n", c.name, worst);
}

INSTANTIATE_TEST_SUITE_P(pack, hf_golden, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace glia
