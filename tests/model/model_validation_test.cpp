// Hyperparameters and tensors that do not fit together are refused with messages that name what is
// wrong; evaluation errors (bad token ids, context overflow, non-finite values) come back as values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "tiny_model.h"

namespace glia {
namespace {

using test::load;
using test::loaded;

std::string load_error(const gguf::writer& w) {
  loaded l = load(w);
  return l.m.is_ok() ? std::string("(loaded)") : l.m.message();
}

// A writer's file parsed back, to read or to copy with changes (the bytes back the file).
struct parsed_file {
  std::vector<uint8_t> bytes;
  std::shared_ptr<gguf::file> f;
};

parsed_file parsed(const gguf::writer& w) {
  parsed_file p;
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.is_ok()) << bytes.message();
  if (!bytes) return p;
  p.bytes = std::move(*bytes);
  auto f = gguf::file::from_memory(p.bytes);
  EXPECT_TRUE(f.is_ok()) << f.message();
  if (f) p.f = std::move(*f);
  return p;
}

TEST(model_validation, tiny_model_loads) {
  loaded l = load(test::make_tiny_llama({}));
  ASSERT_TRUE(l.m.is_ok()) << l.m.message();
  EXPECT_EQ((*l.m)->profile.n_layer, 2);
  EXPECT_EQ((*l.m)->profile.layers[0].head_dim_k, 8);
  EXPECT_TRUE((*l.m)->weights.tied_output);
}

TEST(model_validation, zero_heads) {
  auto w = test::make_tiny_llama({});
  w.set_u32("llama.attention.head_count", 0);
  EXPECT_NE(load_error(w).find("head count 0"), std::string::npos) << load_error(w);
}

TEST(model_validation, kv_heads_must_divide_heads) {
  auto w = test::make_tiny_llama({});
  w.set_u32("llama.attention.head_count_kv", 3);
  EXPECT_NE(load_error(w).find("KV head count 3"), std::string::npos) << load_error(w);
}

TEST(model_validation, nan_epsilon) {
  auto w = test::make_tiny_llama({});
  w.set_f32("llama.attention.layer_norm_rms_epsilon", std::numeric_limits<float>::quiet_NaN());
  EXPECT_NE(load_error(w).find("layer_norm_rms_epsilon"), std::string::npos) << load_error(w);
}

TEST(model_validation, negative_rope_base) {
  auto w = test::make_tiny_llama({});
  w.set_f32("llama.rope.freq_base", -1.0f);
  EXPECT_NE(load_error(w).find("rope.freq_base"), std::string::npos) << load_error(w);
}

TEST(model_validation, odd_rope_dims_larger_than_head) {
  auto w = test::make_tiny_llama({});
  w.set_u32("llama.rope.dimension_count", 9);
  EXPECT_NE(load_error(w).find("RoPE dimension count 9"), std::string::npos) << load_error(w);
}

TEST(model_validation, unknown_architecture) {
  auto w = test::make_tiny_llama({});
  w.set_string("general.architecture", "mamba");
  EXPECT_NE(load_error(w).find("architecture 'mamba' is not supported"), std::string::npos) << load_error(w);
}

// RoPE scaling keys as llama.cpp reads them: a factor without a type is linear, and type "none"
// never scales, whatever factor (or older rope.scale_linear) the file also carries.
TEST(model_validation, rope_scaling_type_defaults_as_llama_cpp) {
  auto freq_scale = [](const std::function<void(gguf::writer&)>& edit) {
    auto w = test::make_tiny_llama({});
    edit(w);
    const parsed_file pf = parsed(w);
    if (!pf.f) return -1.0f;
    auto p = profile_from_gguf(*pf.f);
    EXPECT_TRUE(p.is_ok()) << p.message();
    return p.is_ok() ? p->layers[0].rope.freq_scale : -1.0f;
  };
  EXPECT_EQ(freq_scale([](gguf::writer&) {}), 1.0f);
  EXPECT_EQ(freq_scale([](gguf::writer& w) { w.set_f32("llama.rope.scaling.factor", 4.0f); }), 0.25f);
  EXPECT_EQ(freq_scale([](gguf::writer& w) { w.set_f32("llama.rope.scale_linear", 2.0f); }), 0.5f);
  EXPECT_EQ(freq_scale([](gguf::writer& w) {
              w.set_string("llama.rope.scaling.type", "none");
              w.set_f32("llama.rope.scaling.factor", 4.0f);
              w.set_f32("llama.rope.scale_linear", 2.0f);
            }),
            1.0f);
}

// A tensor nothing uses changes the model the file describes (a llama file's biases, which llama.cpp
// applies): refused rather than ignored.
TEST(model_validation, a_tensor_the_model_does_not_use_is_refused) {
  for (const char* extra : {"blk.0.attn_output.bias", "blk.1.ffn_down.bias", "output_norm.bias"}) {
    const parsed_file tiny = parsed(test::make_tiny_llama({}));
    ASSERT_TRUE(tiny.f);
    gguf::writer w2;
    w2.copy_metadata(*tiny.f);
    ASSERT_TRUE(w2.copy_tensors(*tiny.f).is_ok());
    const std::vector<float> bias(32, 0.5f);
    ASSERT_TRUE(w2.add_tensor(extra, uint32_t(dtype::f32), {32}, std::span(reinterpret_cast<const uint8_t*>(bias.data()), bias.size() * 4)).is_ok());
    const std::string e = load_error(w2);
    EXPECT_NE(e.find(std::string("tensor ") + extra + " is not part of a llama model as glia runs it"), std::string::npos) << e;
  }
}

// feed_forward_length per layer (llama.cpp reads an array too): each layer's gate is checked
// against its own width.
TEST(model_validation, feed_forward_length_per_layer) {
  auto w = test::make_tiny_llama({});
  w.set_i32_array("llama.feed_forward_length", {48, 48});
  const parsed_file pf = parsed(w);
  ASSERT_TRUE(pf.f);
  auto m = load_model(pf.f);
  ASSERT_TRUE(m.is_ok()) << m.message();
  EXPECT_EQ((*m)->profile.layers[1].n_ff, 48);
  w.set_i32_array("llama.feed_forward_length", {48, 64});
  EXPECT_NE(load_error(w).find("tensor blk.1.ffn_gate.weight has shape [32, 48], expected [32, 64]"), std::string::npos) << load_error(w);
  w.set_i32_array("llama.feed_forward_length", {48});
  EXPECT_NE(load_error(w).find("array has 1 entries, expected one per layer (2)"), std::string::npos) << load_error(w);
}

TEST(model_validation, missing_tensor_names_expected_shape) {
  test::tiny_llama_spec s;
  auto w = test::make_tiny_llama(s);
  // Rebuild without blk.1.ffn_up.weight.
  gguf::writer w2;
  const parsed_file tiny = parsed(w);
  ASSERT_TRUE(tiny.f);
  w2.copy_metadata(*tiny.f);
  for (const auto& t : tiny.f->tensors()) {
    if (t.name == "blk.1.ffn_up.weight") continue;
    std::vector<int64_t> dims(t.ne, t.ne + t.n_dims);
    ASSERT_TRUE(w2.add_tensor(t.name, t.type, dims, std::span<const uint8_t>(t.data, t.n_bytes)).is_ok());
  }
  const std::string e = load_error(w2);
  EXPECT_NE(e.find("missing tensor blk.1.ffn_up.weight (expected shape [32, 48])"), std::string::npos) << e;
}

TEST(model_validation, misshaped_tensor) {
  const parsed_file tiny = parsed(test::make_tiny_llama({}));
  ASSERT_TRUE(tiny.f);
  gguf::writer w2;
  w2.copy_metadata(*tiny.f);
  for (const auto& t : tiny.f->tensors()) {
    std::vector<int64_t> dims(t.ne, t.ne + t.n_dims);
    if (t.name == "blk.0.attn_k.weight") dims = {16, 32};  // transposed
    ASSERT_TRUE(w2.add_tensor(t.name, t.type, dims, std::span<const uint8_t>(t.data, t.n_bytes)).is_ok());
  }
  const std::string e = load_error(w2);
  EXPECT_NE(e.find("tensor blk.0.attn_k.weight has shape [16, 32], expected [32, 16]"), std::string::npos) << e;
}

struct tiny_forward_state {
  loaded& l;
  std::unique_ptr<backend>& be;
  std::unique_ptr<kv_cache>& cache;
};

class tiny_forward : public ::testing::Test {
 protected:
  tiny_forward_state state() { return {l_, be_, cache_}; }
  void SetUp() override {
    l_ = load(test::make_tiny_llama({}));
    ASSERT_TRUE(l_.m.is_ok()) << l_.m.message();
    be_ = make_cpu_backend(2);
    auto c = kv_cache::create((*l_.m)->profile, 16, 8, dtype::f32, *be_);
    ASSERT_TRUE(c.is_ok());
    cache_ = std::make_unique<kv_cache>(std::move(*c));
  }
  loaded l_;
  std::unique_ptr<backend> be_;
  std::unique_ptr<kv_cache> cache_;
};

TEST_F(tiny_forward, token_outside_vocabulary) {
  forward_pass fwd(**l_.m, *be_);
  std::vector<int32_t> ids = {1, 2, 64};
  std::vector<float> logits;
  status s = fwd.run(*cache_, ids, 0, true, logits);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("token id 64 at position 2 is outside the vocabulary (0..63)"), std::string::npos) << s.message();
  ids = {-1};
  EXPECT_FALSE(fwd.run(*cache_, ids, 0, true, logits).is_ok());
}

TEST_F(tiny_forward, context_overflow) {
  forward_pass fwd(**l_.m, *be_);
  std::vector<int32_t> ids(10, 3);
  std::vector<float> logits;
  ASSERT_TRUE(fwd.run(*cache_, ids, 0, false, logits).is_ok());
  status s = fwd.run(*cache_, ids, 10, false, logits);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("context overflow"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the context holds 16"), std::string::npos) << s.message();
}

// Sets one weight of layer 1's `which` matrix to `value` and runs `n_ids` tokens from an empty cache:
// the error must name layer 1, position 0.
void expect_non_finite_in_layer_1(const tiny_forward_state& f, weight_view layer_weights::*which, float value, size_t n_ids) {
  auto& m = const_cast<model&>(**f.l.m);
  auto* w = const_cast<float*>(static_cast<const float*>((m.weights.layers[1].*which).data));
  const float kept = w[7];
  w[7] = value;
  forward_pass fwd(m, *f.be);
  const std::vector<int32_t> ids = {5, 6, 7};
  std::vector<float> logits;
  f.cache->clear();
  status s = fwd.run(*f.cache, std::span(ids).first(n_ids), 0, true, logits);
  w[7] = kept;
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("layer 1 at position 0"), std::string::npos) << s.message();
}

TEST_F(tiny_forward, non_finite_reports_layer_and_position) {
  // An infinite FFN down weight: the first non-finite value is in layer 1's output.
  expect_non_finite_in_layer_1(state(), &layer_weights::ffn_down, std::numeric_limits<float>::infinity(), 3);
}

// A NaN in a query weight makes NaN attention scores; attention's softmax must pass them on (its
// running max skips NaN, and a NaN weight sum once read as "no visible key" and gave zeros), so the
// report names the layer, in the batch and token by token.
TEST_F(tiny_forward, nan_in_attention_scores_reports_layer_and_position) {
  for (size_t n_ids : {3, 1}) expect_non_finite_in_layer_1(state(), &layer_weights::wq, std::numeric_limits<float>::quiet_NaN(), n_ids);
}

TEST_F(tiny_forward, batch_one_by_one_and_chunks_agree) {
  forward_pass fwd(**l_.m, *be_);
  std::vector<int32_t> ids = {1, 9, 17, 33, 2, 63, 0, 12, 40, 41, 5};
  std::vector<float> batch, row, seq;
  ASSERT_TRUE(fwd.run(*cache_, ids, 0, true, batch).is_ok());
  cache_->clear();
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(fwd.run(*cache_, std::span<const int32_t>(&ids[i], 1), int32_t(i), false, row).is_ok());
    seq.insert(seq.end(), row.begin(), row.end());
  }
  ASSERT_EQ(batch.size(), seq.size());
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_NEAR(batch[i], seq[i], 1e-4f) << i;
}

// The cache's views bound attention at the highest position stored since clear() (n_live), through
// truncation and clearing; a truncated cache then decodes what a fresh one does.
TEST_F(tiny_forward, views_bound_the_live_slots) {
  forward_pass fwd(**l_.m, *be_);
  const std::vector<int32_t> ids = {4, 8, 15, 16, 23, 42};
  std::vector<float> fresh, again;
  EXPECT_EQ(cache_->layer(0).n_live, 0);
  ASSERT_TRUE(fwd.run(*cache_, std::span(ids).first(5), 0, false, fresh).is_ok());
  EXPECT_EQ(cache_->layer(0).n_live, 5);
  ASSERT_TRUE(fwd.run(*cache_, std::span(ids).subspan(5), 5, false, fresh).is_ok());
  EXPECT_EQ(cache_->layer(1).n_live, 6);
  ASSERT_TRUE(cache_->truncate(3));
  EXPECT_EQ(cache_->layer(0).n_live, 3);
  ASSERT_TRUE(fwd.run(*cache_, std::span(ids).subspan(3), 3, false, again).is_ok());
  EXPECT_EQ(cache_->layer(0).n_live, 6);
  ASSERT_EQ(fresh.size(), again.size());
  for (size_t i = 0; i < fresh.size(); ++i) EXPECT_NEAR(fresh[i], again[i], 1e-4f) << i;
  cache_->clear();
  EXPECT_EQ(cache_->layer(0).n_live, 0);
}

}  // namespace
}  // namespace glia
