// model::decode_weight_bytes (what `glia bench` and `glia info` report a decode step reads) against
// the file's own tensor table: every tensor, less the embedding table but one row of it, plus the
// whole table again when the LM head is tied to it.
#include <gtest/gtest.h>

#include "model/model.h"
#include "test_support.h"

namespace glia {
namespace {

class decode_bytes : public ::testing::TestWithParam<const char*> {};

TEST_P(decode_bytes, every_tensor_but_the_embedding_table_and_one_row_of_it) {
  auto m = load_model(test::testdata(std::string("models/") + GetParam()));
  ASSERT_TRUE(m.is_ok()) << m.message();
  const auto& tensors = (*m)->file->tensors();
  uint64_t expected = 0;
  uint64_t embd_bytes = 0, embd_rows = 0;
  bool has_output = false;
  for (const auto& t : tensors) {
    // The small vectors are F32 in these files, so their bytes are the floats the engine reads.
    if (t.n_dims == 1) {
      ASSERT_EQ(t.type, 0u) << t.name;
    }
    if (t.name == "token_embd.weight") {
      embd_bytes = t.n_bytes;
      embd_rows = uint64_t(t.ne[1]);
      continue;
    }
    has_output = has_output || t.name == "output.weight";
    expected += t.n_bytes;
  }
  ASSERT_GT(embd_rows, 0u);
  expected += embd_bytes / embd_rows;
  if (!has_output) expected += embd_bytes;
  EXPECT_EQ((*m)->decode_weight_bytes(), expected);
}

// Qwen2: q/k/v biases; Qwen3, Gemma 3: per-head q/k norms; Gemma 2-4: post-norms; tied and untied heads.
INSTANTIATE_TEST_SUITE_P(models, decode_bytes,
                         ::testing::Values("qwen2-F16.gguf", "qwen3-F16.gguf", "gemma2-F16.gguf", "gemma3-F16.gguf",
                                           "gemma4-F16.gguf", "llama-untied-F16.gguf", "llama-tied-Q4_0.gguf",
                                           "llama-rope-llama3-F16.gguf"),
                         [](const auto& info) { return test::param_name(info.param); });

}  // namespace
}  // namespace glia
