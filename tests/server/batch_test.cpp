// session::eval_batch: several sequences in one forward pass give, for each sequence, exactly the
// logits it gets evaluated alone (batch-invariant kernels), so server results never depend on
// concurrency. Prompts of different lengths, then decode steps, then a sequence that leaves the batch.
#include <gtest/gtest.h>

#include "glia/session.h"
#include "server_process.h"

namespace glia::test {
namespace {

std::unique_ptr<session> open() {
  session_options o;
  o.model_path = test_model();
  o.n_threads = 2;
  auto s = session::create(o);
  EXPECT_TRUE(s) << s.message();
  return s ? std::move(*s) : nullptr;
}

// Logits of the last token after evaluating `ids` alone, from an empty context.
std::vector<float> alone(session& s, const std::vector<int32_t>& ids) {
  s.reset();
  std::vector<float> logits;
  EXPECT_TRUE(s.eval(ids, false, logits));
  return logits;
}

TEST(ServerBatch, BatchedEqualsAlone) {
  auto solo = open();
  auto batched = open();
  ASSERT_TRUE(solo && batched);
  ASSERT_TRUE(batched->set_sequence_count(3));
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 337, 501, 332, 959, 554}, {1, 758, 881, 271, 276, 263, 472, 280, 292}, {1, 337}};
  const size_t n_vocab = size_t(solo->n_vocab());
  std::vector<session::batch_item> items;
  for (int i = 0; i < 3; ++i) items.push_back({i, prompts[size_t(i)]});
  std::vector<float> logits;
  ASSERT_TRUE(batched->eval_batch(items, logits));
  ASSERT_EQ(logits.size(), 3 * n_vocab);
  for (size_t i = 0; i < 3; ++i) {
    auto ref = alone(*solo, prompts[i]);
    EXPECT_TRUE(std::equal(ref.begin(), ref.end(), logits.begin() + std::ptrdiff_t(i * n_vocab))) << "prompt " << i;
  }
  // Four decode steps of one token each; sequence 1 sits out the last two (it left the batch).
  std::vector<std::vector<int32_t>> hist = prompts;
  for (int step = 0; step < 4; ++step) {
    std::vector<std::vector<int32_t>> next;
    items.clear();
    for (int i = 0; i < 3; ++i) {
      if (i == 1 && step >= 2) continue;
      next.push_back({int32_t(300 + 7 * step + i)});
    }
    size_t k = 0;
    for (int i = 0; i < 3; ++i) {
      if (i == 1 && step >= 2) continue;
      items.push_back({i, next[k++]});
    }
    ASSERT_TRUE(batched->eval_batch(items, logits));
    k = 0;
    for (const auto& it : items) {
      hist[size_t(it.seq)].push_back(it.tokens[0]);
      auto ref = alone(*solo, hist[size_t(it.seq)]);
      EXPECT_TRUE(std::equal(ref.begin(), ref.end(), logits.begin() + std::ptrdiff_t(k * n_vocab)))
          << "step " << step << " sequence " << it.seq;
      ++k;
    }
  }
  EXPECT_EQ(batched->sequence_history(0), hist[0]);
  // Keeping a prefix and continuing matches too.
  ASSERT_TRUE(batched->sequence_keep(2, 2));
  const std::vector<int32_t> tail = {959, 554};
  items = {{2, tail}};
  ASSERT_TRUE(batched->eval_batch(items, logits));
  auto ref = alone(*solo, {1, 337, 959, 554});
  EXPECT_TRUE(std::equal(ref.begin(), ref.end(), logits.begin()));
}

TEST(ServerBatch, RejectsBadItems) {
  auto s = open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->set_sequence_count(2));
  std::vector<float> logits;
  const std::vector<int32_t> a = {1, 2};
  std::vector<session::batch_item> twice = {{0, a}, {0, a}};
  EXPECT_FALSE(s->eval_batch(twice, logits));
  std::vector<session::batch_item> missing = {{5, a}};
  EXPECT_FALSE(s->eval_batch(missing, logits));
  const std::vector<int32_t> bad = {1, 99999};
  std::vector<session::batch_item> out_of_vocab = {{1, bad}};
  EXPECT_FALSE(s->eval_batch(out_of_vocab, logits));
}

}  // namespace
}  // namespace glia::test
