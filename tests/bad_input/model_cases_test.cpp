// Hostile model contents inside a well-formed GGUF container: absurd hyperparameters, missing or
// mis-shaped tensors, and broken vocabularies. Each is refused when the model (or its tokenizer)
// loads, with a one-line message naming the key or tensor, the value and the limit, both through
// the glia binary and through load_model / tokenizer::from_gguf.
#include <gtest/gtest.h>

#include <limits>

#include "cli_runner.h"
#include "hostile_case.h"

namespace glia::test {
namespace {

std::function<bytes()> with(std::function<void(gguf::writer&)> edit, tiny_options o = {}) {
  return [edit, o] {
    gguf::writer w = tiny_model(o);
    edit(w);
    return to_bytes(w);
  };
}

std::function<bytes()> shaped(tiny_options o) {
  return [o] { return to_bytes(tiny_model(o)); };
}

std::vector<std::string> tokens_with(size_t index, std::string text) {
  std::vector<std::string> t = {"<unk>", "<s>", "</s>", "<0x0A>", "<0x41>", "<0xC3>", "\xE2\x96\x81", "a",
                                "b", "c", "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab", "abc", "bc", "ca"};
  t.at(index) = std::move(text);
  return t;
}

const float nan = std::numeric_limits<float>::quiet_NaN();

std::vector<hostile_case> model_cases() {
  return {
      // Hyperparameters.
      {"billion_layers", with([](gguf::writer& w) { w.set_u32("llama.block_count", 1000000000); }),
       "metadata key llama.block_count: 1000000000 layers is outside 1..4096", via::info, layer::model},
      {"zero_layers", with([](gguf::writer& w) { w.set_u32("llama.block_count", 0); }),
       "metadata key llama.block_count: 0 layers is outside 1..4096", via::info, layer::model},
      {"block_count_missing", with([](gguf::writer& w) { w.remove("llama.block_count"); }),
       "missing metadata key llama.block_count", via::info, layer::model},
      {"block_count_is_a_string", with([](gguf::writer& w) { w.set_string("llama.block_count", "1"); }),
       "metadata key llama.block_count: expected an integer, found string", via::info, layer::model},
      {"block_count_below_the_file_s_layers", with([](gguf::writer& w) { w.set_u32("llama.block_count", 1); }, {.n_layer = 2}),
       "belongs to layer 1, but the file's block count is 1", via::run, layer::model},
      {"huge_embedding", with([](gguf::writer& w) { w.set_u64("llama.embedding_length", uint64_t(1) << 40); }),
       "metadata key llama.embedding_length: 1099511627776 is outside 1..1048576", via::info, layer::model},
      {"head_count_0", with([](gguf::writer& w) { w.set_u32("llama.attention.head_count", 0); }),
       "layer 0: head count 0 is outside 1..4096", via::info, layer::model},
      {"kv_heads_do_not_divide_heads",
       with([](gguf::writer& w) { w.set_u32("llama.attention.head_count_kv", 3); }, {.n_embd = 12, .n_head = 4}),
       "layer 0: KV head count 3 must be positive and divide the head count 4", via::info, layer::model},
      {"more_kv_heads_than_heads", with([](gguf::writer& w) { w.set_u32("llama.attention.head_count_kv", 4); }),
       "layer 0: KV head count 4 must be positive and divide the head count 2", via::info, layer::model},
      {"embedding_not_a_head_multiple", with([](gguf::writer& w) { w.set_u32("llama.attention.head_count", 3); }),
       "embedding length 8 is not a multiple of the head count 3", via::info, layer::model},
      {"nan_epsilon", with([](gguf::writer& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", nan); }),
       "metadata key llama.attention.layer_norm_rms_epsilon: epsilon must be in (0, 1], found nan", via::info,
       layer::model},
      {"negative_rope_base", with([](gguf::writer& w) { w.set_f32("llama.rope.freq_base", -1.0f); }),
       "metadata key llama.rope.freq_base: RoPE base must be a positive number, found -1", via::info, layer::model},
      {"odd_rope_dimensions", with([](gguf::writer& w) { w.set_u32("llama.rope.dimension_count", 3); }),
       "layer 0: RoPE dimension count 3 must be even and at most the head size 4", via::info, layer::model},
      {"unknown_rope_scaling", with([](gguf::writer& w) {
         w.set_string("llama.rope.scaling.type", "longrope");
         w.set_f32("llama.rope.scaling.factor", 2.0f);
       }),
       "metadata key llama.rope.scaling.type: rope scaling type 'longrope' is not supported (none, linear, yarn)",
       via::info, layer::model},
      {"head_size_2048", with([](gguf::writer& w) { w.set_u32("llama.attention.key_length", 2048); }),
       "layer 0: head sizes (key 2048, value 2048) must be in 1..1024", via::info, layer::model},
      {"architecture_missing", with([](gguf::writer& w) { w.remove("general.architecture"); }),
       "missing metadata key general.architecture", via::info, layer::model},
      {"architecture_unknown", with([](gguf::writer& w) { w.set_string("general.architecture", "mamba"); }),
       "architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, gemma, gemma2, gemma3, gemma4)",
       via::info, layer::model},
      // Text from the file is quoted with its control bytes escaped: the message stays one line.
      {"architecture_with_control_bytes", with([](gguf::writer& w) { w.set_string("general.architecture", "lla\nma\r"); }),
       "architecture 'lla\\x0ama\\x0d' is not supported", via::info, layer::model},
      // Tensors.
      {"tensor_missing", shaped({.skip = "blk.0.ffn_up.weight"}),
       "missing tensor blk.0.ffn_up.weight (expected shape [8, 16])", via::info, layer::model},
      {"token_embedding_missing", shaped({.skip = "token_embd.weight"}), "missing tensor token_embd.weight",
       via::info, layer::model},
      {"tensor_transposed", shaped({.dims = {{"blk.0.attn_k.weight", {4, 8}}}}),
       "tensor blk.0.attn_k.weight has shape [4, 8], expected [8, 4]", via::info, layer::model},
      {"tensor_3d", shaped({.dims = {{"blk.0.ffn_down.weight", {16, 8, 1}}}}),
       "tensor blk.0.ffn_down.weight has shape [16, 8, 1], expected [16, 8]", via::info, layer::model},
      {"norm_too_short", shaped({.dims = {{"blk.0.attn_norm.weight", {4}}}}),
       "tensor blk.0.attn_norm.weight has shape [4], expected [8]", via::info, layer::model},
      {"nan_weight_logits", shaped({.poison = "blk.0.attn_output.weight", .poison_at = 5}), "non-finite value (nan) in the output of layer 0 at position 0", via::logits, layer::forward},
      // Vocabulary (glia run loads the tokenizer after the model).
      {"tokenizer_missing", with([](gguf::writer& w) { w.remove("tokenizer.ggml.model"); }),
       "tokenizer.ggml.model: missing (the file has no tokenizer)", via::run, layer::tokenizer},
      {"tokenizer_unsupported", with([](gguf::writer& w) { w.set_string("tokenizer.ggml.model", "rwkv"); }),
       "tokenizer.ggml.model = 'rwkv': unsupported tokenizer", via::run, layer::tokenizer},
      {"tokens_not_strings", with([](gguf::writer& w) { w.set_i32_array("tokenizer.ggml.tokens", {1, 2, 3}); }),
       "tokenizer.ggml.tokens: expected an array of string, found an array of i32", via::run, layer::tokenizer},
      {"tokens_empty", with([](gguf::writer& w) { w.set_string_array("tokenizer.ggml.tokens", {}); }),
       "tokenizer.ggml.tokens: is empty", via::run, layer::tokenizer},
      {"scores_too_short", with([](gguf::writer& w) { w.set_f32_array("tokenizer.ggml.scores", {0.0f, 1.0f}); }),
       "tokenizer.ggml.scores: has 2 entries but tokenizer.ggml.tokens has 16", via::run, layer::tokenizer},
      {"scores_are_strings", with([](gguf::writer& w) { w.set_string_array("tokenizer.ggml.scores", {"x"}); }),
       "tokenizer.ggml.scores: expected an array of f32 or i32, found an array of string", via::run,
       layer::tokenizer},
      {"token_types_too_long",
       with([](gguf::writer& w) { w.set_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(17, 1)); }),
       "tokenizer.ggml.token_type: has 17 entries but tokenizer.ggml.tokens has 16", via::run, layer::tokenizer},
      {"token_type_9", with([](gguf::writer& w) {
         std::vector<int32_t> t(16, 1);
         t[7] = 9;
         w.set_i32_array("tokenizer.ggml.token_type", t);
       }),
       "tokenizer.ggml.token_type[7] = 9: not a token type (0..6)", via::run, layer::tokenizer},
      {"malformed_byte_token",
       with([](gguf::writer& w) { w.set_string_array("tokenizer.ggml.tokens", tokens_with(4, "<0xZZ>")); }),
       "tokenizer.ggml.tokens[4] = '<0xZZ>': token type 6 (byte) needs a text of the form <0xNN>", via::run,
       layer::tokenizer},
      {"byte_token_with_a_newline",
       with([](gguf::writer& w) { w.set_string_array("tokenizer.ggml.tokens", tokens_with(4, "<0x\n>")); }),
       "tokenizer.ggml.tokens[4] = '<0x\\x0a>': token type 6 (byte) needs a text of the form <0xNN>", via::run,
       layer::tokenizer},
      {"duplicate_token_text",
       with([](gguf::writer& w) { w.set_string_array("tokenizer.ggml.tokens", tokens_with(9, "ab")); }),
       "tokenizer.ggml.tokens: duplicate token text 'ab' at ids 9 and 11", via::run, layer::tokenizer},
      {"bos_out_of_range", with([](gguf::writer& w) { w.set_u32("tokenizer.ggml.bos_token_id", 999); }),
       "tokenizer.ggml.bos_token_id = 999: outside the vocabulary (n_vocab 16)", via::run, layer::tokenizer},
      {"eos_out_of_range", with([](gguf::writer& w) { w.set_i32("tokenizer.ggml.eos_token_id", -5); }),
       "tokenizer.ggml.eos_token_id = -5: outside the vocabulary (n_vocab 16)", via::run, layer::tokenizer},
      {"unk_id_is_a_string", with([](gguf::writer& w) { w.set_string("tokenizer.ggml.unknown_token_id", "0"); }),
       "tokenizer.ggml.unknown_token_id: expected an integer id, found string", via::run, layer::tokenizer},
      {"add_bos_not_a_bool", with([](gguf::writer& w) { w.set_string("tokenizer.ggml.add_bos_token", "yes"); }),
       "tokenizer.ggml.add_bos_token: expected a bool, found string", via::run, layer::tokenizer},
  };
}

class model_hostile : public ::testing::TestWithParam<hostile_case> {};

TEST_P(model_hostile, cli_refuses_with_one_line) { expect_cli_refuses(GetParam()); }
TEST_P(model_hostile, library_refuses) { expect_library_refuses(GetParam()); }

INSTANTIATE_TEST_SUITE_P(bad_input, model_hostile, ::testing::ValuesIn(model_cases()),
                         [](const auto& info) { return info.param.name; });

// The tokenizer and the embedding disagree on the vocabulary size. Both files load; what matters
// is that running them never indexes past either table.
TEST(vocab_size_mismatch, tokenizer_larger_than_embedding_fails_cleanly) {
  // 16 tokens, 8 embedding rows: "abc" tokenizes to ids above 7.
  const std::string path = write_scratch("vocab_bigger", to_bytes(tiny_model({.dims = {{"token_embd.weight", {8, 8}}}})));
  const cli_result r = run_glia({"run", "-m", path, "-p", "abc", "-n", "2", "--temp", "0"});
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("is outside the vocabulary (0..7)"), std::string::npos) << lines[0];
}

TEST(vocab_size_mismatch, embedding_larger_than_tokenizer_runs) {
  // 32 embedding rows, 16 tokens: sampled ids 16..31 have no text and print nothing.
  const std::string path = write_scratch("vocab_smaller", to_bytes(tiny_model({.dims = {{"token_embd.weight", {8, 32}}}})));
  const cli_result r = run_glia({"run", "-m", path, "-p", "abc", "-n", "8", "--temp", "0"});
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace glia::test
