// The forward pass's recorded one-token steps (what the CUDA backend runs as CUDA graphs), checked
// on any machine: a backend that wraps the reference one, claims device memory and "records" by
// keeping the ops it is given as closures, which a replay runs again on whatever the buffers then
// hold, as a graph does. Replayed steps must give the bits that issuing the ops gives.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "tiny_model.h"

namespace glia {
namespace {

class recording_backend final : public backend {
 public:
  std::string name() const override { return "recording"; }
  bool host_memory() const override { return false; }  // so the forward pass records its steps

  void get_rows(const weight_view& t, const int32_t* ids, int64_t n, float* out) override {
    op([=, this] { ref_->get_rows(t, ids, n, out); });
  }
  void matmul(const weight_view& w, const float* x, int64_t n_tok, float* y) override {
    op([=, this] { ref_->matmul(w, x, n_tok, y); });
  }
  void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) override {
    op([=, this] { ref_->rms_norm(x, w, y, rows, n, eps); });
  }
  void rope(float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* pos, const rope_params& p) override {
    op([=, this] { ref_->rope(x, n_tok, n_head, head_dim, pos, p); });
  }
  void kv_store(const kv_layer_view& kv, const float* k, const float* v, const int32_t* pos, int64_t n_tok) override {
    op([=, this] { ref_->kv_store(kv, k, v, pos, n_tok); });
  }
  void attention(const kv_layer_view& kv, const float* q, const int32_t* pos, int64_t n_tok, const attention_params& p,
                 float* out) override {
    op([=, this] { ref_->attention(kv, q, pos, n_tok, p, out); });
  }
  void glu(const float* g, const float* u, float* out, int64_t n_tok, int64_t n, activation a) override {
    op([=, this] { ref_->glu(g, u, out, n_tok, n, a); });
  }
  void add(const float* a, const float* b, float* out, int64_t n) override {
    op([=, this] { ref_->add(a, b, out, n); });
  }
  void add_bias(float* x, const float* bias, int64_t rows, int64_t n) override {
    op([=, this] { ref_->add_bias(x, bias, rows, n); });
  }
  void scale(float* x, float s, int64_t n) override {
    op([=, this] { ref_->scale(x, s, n); });
  }
  void softcap(float* x, float cap, int64_t n) override {
    op([=, this] { ref_->softcap(x, cap, n); });
  }
  void find_nonfinite(const float* x, int64_t n, nonfinite_record* r) override {
    op([=, this] { ref_->find_nonfinite(x, n, r); });
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    op([=, this] { ref_->copy(dst, src, bytes); });
  }

  bool begin_recording() override {
    ++recordings_begun;
    recording_ = true;
    pending_.clear();
    return true;
  }
  int end_recording() override {
    recording_ = false;
    if (fail_recordings) return -1;
    recordings_[next_id_] = std::move(pending_);
    return next_id_++;
  }
  bool replay(int id) override {
    auto it = recordings_.find(id);
    if (it == recordings_.end() || stale) return false;
    for (auto& f : it->second) f();
    return true;
  }
  void drop_recording(int id) override { recordings_.erase(id); }

  bool fail_recordings = false;  // end_recording fails, as a capture that met a host pointer
  bool stale = false;            // replays refuse, as after the backend reallocated its buffers
  int recordings_begun = 0;

 private:
  void op(std::function<void()> f) {
    if (recording_) pending_.push_back(std::move(f));
    else f();
  }
  std::unique_ptr<backend> ref_ = make_ref_backend();
  bool recording_ = false;
  std::vector<std::function<void()>> pending_;
  std::map<int, std::vector<std::function<void()>>> recordings_;
  int next_id_ = 0;
};

// Logits of a 4-token prompt and then `steps` single tokens, through fwd on its backend b.
std::vector<float> prompt_then_steps(const model& m, backend& b, forward_pass& fwd, int steps) {
  auto cache = kv_cache::create(m.profile, 32, 8, dtype::f32, b);
  EXPECT_TRUE(cache.is_ok());
  std::vector<float> all, logits;
  const std::vector<int32_t> prompt = {3, 14, 15, 9};
  EXPECT_TRUE(fwd.run(*cache, prompt, 0, false, logits).is_ok());
  all = logits;
  for (int i = 0; i < steps; ++i) {
    const int32_t id = int32_t((7 * i + 2) % 64);
    EXPECT_TRUE(fwd.run(*cache, std::span(&id, 1), int32_t(prompt.size()) + i, false, logits).is_ok());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

class recorded_steps : public ::testing::Test {
 protected:
  void SetUp() override {
    l_ = test::load(test::make_tiny_llama({}));
    ASSERT_TRUE(l_.m.is_ok()) << l_.m.message();
    const auto ref = make_ref_backend();
    forward_pass fwd(**l_.m, *ref);
    want_ = prompt_then_steps(**l_.m, *ref, fwd, 6);
  }
  // The prompt and steps through fwd on b give the reference backend's logits, bit for bit.
  void expect_reference_bits(backend& b, forward_pass& fwd) {
    const auto got = prompt_then_steps(**l_.m, b, fwd, 6);
    ASSERT_EQ(got.size(), want_.size());
    EXPECT_EQ(std::memcmp(got.data(), want_.data(), got.size() * sizeof(float)), 0);
  }
  test::loaded l_;
  std::vector<float> want_;
};

TEST_F(recorded_steps, replays_give_the_bits_of_issued_ops) {
  recording_backend b;
  forward_pass fwd(**l_.m, b);
  expect_reference_bits(b, fwd);
  EXPECT_EQ(fwd.one_token_steps(), 6u);
  EXPECT_EQ(fwd.replayed_steps(), 5u);  // the first step of a cache runs op by op
  EXPECT_EQ(b.recordings_begun, 1);
}

TEST_F(recorded_steps, failed_recordings_fall_back_and_stop_after_two) {
  recording_backend b;
  b.fail_recordings = true;
  forward_pass fwd(**l_.m, b);
  expect_reference_bits(b, fwd);
  EXPECT_EQ(fwd.replayed_steps(), 0u);
  EXPECT_EQ(b.recordings_begun, 2);
}

TEST_F(recorded_steps, a_refused_replay_is_recorded_again) {
  recording_backend b;
  b.stale = true;  // every replay refuses: each step records again and then issues its ops
  forward_pass fwd(**l_.m, b);
  expect_reference_bits(b, fwd);
  EXPECT_EQ(fwd.replayed_steps(), 0u);
  EXPECT_EQ(b.recordings_begun, 5);
}

}  // namespace
}  // namespace glia
