// The prompt chunk size (-b) changes how a context is evaluated, never its logits: every row is
// bit-identical whether the tokens go one at a time, in chunks of 7 or in one batch, sliding-window
// rings included (their size depends on the batch a session is made for, and attention sums the
// window's keys in slot order).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "glia/session.h"
#include "test_support.h"

namespace glia {
namespace {

std::vector<float> all_logits(const std::string& model, int n_ubatch, const std::vector<int32_t>& ids) {
  session_options o;
  o.model_path = test::testdata("models/" + model);
  o.n_threads = 2;
  o.n_ctx = 640;
  o.n_ubatch = n_ubatch;
  auto s = session::create(o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::vector<float> logits;
  if (!s.is_ok()) return logits;
  EXPECT_TRUE((*s)->eval(ids, true, logits).is_ok());
  return logits;
}

TEST(batch_size, logits_do_not_depend_on_the_chunk_size) {
  // Past 8 + 512 - 1 positions, so that gemma2's window-8 rings wrap.
  std::vector<int32_t> ids = {2};
  for (int i = 0; i < 599; ++i) ids.push_back(int32_t(100 + (i * 37) % 900));
  for (const char* model : {"gemma2-F16.gguf", "llama-tied-Q4_0.gguf"}) {
    SCOPED_TRACE(model);
    const std::vector<float> whole = all_logits(model, 512, ids);
    ASSERT_FALSE(whole.empty());
    for (int b : {1, 7}) {
      const std::vector<float> chunked = all_logits(model, b, ids);
      ASSERT_EQ(chunked.size(), whole.size()) << b;
      size_t differ = 0;
      for (size_t i = 0; i < whole.size(); ++i) differ += chunked[i] != whole[i];
      EXPECT_EQ(differ, 0u) << "-b " << b;
    }
  }
}

}  // namespace
}  // namespace glia
