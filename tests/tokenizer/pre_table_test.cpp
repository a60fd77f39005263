// The GGUF `tokenizer.ggml.pre` table against llama.cpp's (src/llama-vocab.cpp, llama_vocab::impl::load
// and llm_tokenizer_bpe): every name llama.cpp maps to a regex pre-tokenizer is known here, its
// regexes compile with PCRE2, and names that need one of llama.cpp's hand-written tokenizers are refused.
#include <gtest/gtest.h>

#include "tokenizer/pre_table.h"
#include "tokenizer/regex.h"

namespace glia::tok {
namespace {

TEST(pre_table, llama_cpp_names_resolve_and_compile) {
  const char* names[] = {"default", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                         "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5", "youtu",
                         "falcon", "mpt", "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                         "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jais-2", "gemma4", "granite-embed-multi-311m",
                         "sarvam-moe", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35",
                         "stablelm2", "olmo", "dbrx", "smaug-bpe", "poro-chat", "glm4", "chatglm-bpe", "viking", "jais",
                         "tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe",
                         "chameleon", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2", "talkie",
                         "granite-embed-multi-97m", "superbpe", "trillion", "granite-docling", "bailingmoe",
                         "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "hunyuan-dense", "hy_v4", "joyai-llm",
                         "ufakzeka", "grok-2", "laguna", "minimax-m2", "solar-open", "mellum2", "minicpm5"};
  for (const char* name : names) {
    const auto p = find_pre_type(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_FALSE(p->regexes.empty()) << name;
    for (const auto& re : p->regexes) {
      auto r = regex::compile(re, regex_dialect::llama_cpp);
      EXPECT_TRUE(r.is_ok()) << name << ": " << r.message();
    }
  }
}

// Flags llama.cpp sets per name (clean_up_tokenization_spaces, ignore_merges, BOS defaults).
TEST(pre_table, llama_cpp_flags) {
  EXPECT_TRUE(find_pre_type("llama3")->ignore_merges);
  EXPECT_TRUE(find_pre_type("llama3")->add_bos);
  EXPECT_TRUE(find_pre_type("llama3")->clean_spaces);
  EXPECT_FALSE(find_pre_type("qwen2")->clean_spaces);
  EXPECT_FALSE(find_pre_type("command-r")->clean_spaces);
  EXPECT_TRUE(find_pre_type("starcoder")->clean_spaces);
  EXPECT_TRUE(find_pre_type("falcon")->clean_spaces);
  EXPECT_FALSE(find_pre_type("deepseek-llm")->clean_spaces);
  EXPECT_TRUE(find_pre_type("tekken")->ignore_merges);
  EXPECT_TRUE(find_pre_type("chatglm-bpe")->no_bos);
  EXPECT_FALSE(find_pre_type("gemma4")->byte_encode);
  EXPECT_TRUE(find_pre_type("youtu")->ignore_merges);
  EXPECT_FALSE(find_pre_type("spark2_5")->clean_spaces);
}

// llama.cpp runs hand-written code (not a regex) for these, so glia refuses them rather than guess.
TEST(pre_table, names_needing_custom_tokenizers_are_unknown) {
  for (const char* name : {"kimi-k2", "afmoe", "tiny_aya", "whitespace", "no-such-pre"})
    EXPECT_FALSE(find_pre_type(name).has_value()) << name;
}

}  // namespace
}  // namespace glia::tok
