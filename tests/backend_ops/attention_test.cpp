// Attention properties: batch invariance (bit-exact) and results known from the softmax definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/ref/ref_ops.h"
#include "harness.h"
#include "op_cases.h"

namespace glia::test {
namespace {

// Each token of a prefill batch must get the bits it gets when it is attended alone.
TEST(attention, batch_invariant) {
  for (int nth : {1, 2, 3}) {
    const auto b = make_cpu_backend(nth);
    for (const attn_config& c : attention_configs()) {
      const std::vector<float> batch = run_attention(*b, c.kv, c.attn, 7, 0);
      const size_t per_tok = size_t(c.attn.n_head) * size_t(c.kv.head_dim_v);
      for (int64_t t = 0; t < 7; ++t) {
        const std::vector<float> one = run_attention(*b, c.kv, c.attn, 1, t);
        EXPECT_TRUE(bit_equal(one.data(), batch.data() + size_t(t) * per_tok, per_tok))
            << c.name << " token " << t << " threads " << nth;
      }
    }
  }
}

// The op harness and the test above run the best attend this host has; every other ISA's attend
// (AVX2 on an AVX-512 host) must match the scalar reference and be batch invariant too.
TEST(attention, every_isa_matches_reference_and_is_batch_invariant) {
  const auto ref = make_ref_backend();
  int tested = 0;
  for (const cpu::kernel_table* kt : host_attend_tables()) {
    const cpu::kernel_table& k = *kt;
    const std::string name = k.attend_isa;
    ++tested;
    for (int nth : {1, 2}) {
      const auto b = cpu::make_cpu_backend(nth, k);
      for (const attn_config& c : attention_configs()) {
        const std::vector<float> batch = run_attention(*b, c.kv, c.attn, 7, 0);
        EXPECT_LE(nmse(batch, run_attention(*ref, c.kv, c.attn, 7, 0)), 1e-6) << name << " " << c.name;
        const size_t per_tok = size_t(c.attn.n_head) * size_t(c.kv.head_dim_v);
        for (int64_t t = 0; t < 7; t += 3) {
          const std::vector<float> one = run_attention(*b, c.kv, c.attn, 1, t);
          EXPECT_TRUE(bit_equal(one.data(), batch.data() + size_t(t) * per_tok, per_tok)) << name << " " << c.name << " token " << t;
        }
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << "no SIMD attend on this host";
}

// The CPU and reference backends read a cache in every order (kv_order) to the same bits: K rows
// transposed per chunk into scratch score as K stored transposed, in every attend the host runs.
TEST(attention, every_kv_order_gives_the_same_bits) {
  for (int nth : {1, 2}) {
    std::vector<std::unique_ptr<backend>> backends;
    for (const cpu::kernel_table* table : host_attend_tables()) backends.push_back(cpu::make_cpu_backend(nth, *table));
    if (nth == 1) backends.push_back(make_ref_backend());  // single-threaded: once is enough
    for (const auto& b : backends) {
      for (const attn_config& c : attention_configs()) {
        for (int64_t n_tok : {int64_t(1), int64_t(7)}) {
          const auto slots = run_attention(*b, c.kv, c.attn, n_tok, 0, kv_order::slot_major);
          for (kv_order o : {kv_order::head_major, kv_order::head_major_kt}) {
            const auto other = run_attention(*b, c.kv, c.attn, n_tok, 0, o);
            EXPECT_TRUE(bit_equal(slots.data(), other.data(), slots.size()))
                << b->name() << " " << c.name << " tokens " << n_tok << " order " << int(o);
          }
        }
      }
    }
  }
}

// The CPU's visibility words against the reference's per-slot rule, at the edges of int32 and of the
// window, for every count of slots a chunk can have.
TEST(attention, visible_bits_match_slot_visible) {
  constexpr int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  std::mt19937 rng(3);
  for (int32_t q : {lo, -5, -1, 0, 1, 2, 63, 64, 1000, hi - 1, hi}) {
    std::vector<int32_t> keys = {lo, lo + 1, -2, -1, 0, 1, 2, hi - 1, hi};
    for (int32_t dq : {-64, -2, -1, 0, 1, 2, 64})
      if (int64_t(q) + dq >= lo && int64_t(q) + dq <= hi) keys.push_back(q + dq);
    while (keys.size() < 64) keys.push_back(int32_t(rng()));
    std::shuffle(keys.begin(), keys.end(), rng);
    for (int window : {lo, -3, 0, 1, 2, 7, 64, 1001, hi})
      for (int cnt : {0, 1, 7, 63, 64}) {
        const uint64_t bits = cpu::visible_bits(keys.data(), cnt, q, window);
        for (int i = 0; i < 64; ++i)
          ASSERT_EQ(bits >> i & 1, i < cnt && ref::slot_visible(keys[size_t(i)], q, window) ? 1u : 0u)
              << "query " << q << " key " << keys[size_t(i)] << " window " << window << " cnt " << cnt << " slot " << i;
      }
  }
}

// A KV cache where every slot holds the same key: all visible scores are equal, so the softmax is
// uniform and the output is the plain mean of the visible V rows. With a single visible slot the
// output is that V row itself.
TEST(attention, uniform_scores_average_values) {
  const int n_slots = 300, dk = 16, dv = 8, n_head = 2;
  std::vector<float> k(size_t(n_slots * dk)), v(size_t(n_slots * dv));
  const auto key = random_floats(size_t(dk), 1);
  const auto vals = random_floats(size_t(n_slots * dv), 2);
  for (int s = 0; s < n_slots; ++s) std::copy(key.begin(), key.end(), k.begin() + s * dk);
  v = vals;
  std::vector<int32_t> slot_pos(static_cast<size_t>(n_slots));
  for (int s = 0; s < n_slots; ++s) slot_pos[size_t(s)] = s;
  kv_layer_view kv{dtype::f32, k.data(), v.data(), slot_pos.data(), n_slots, 1, dk, dv};
  const auto q = random_floats(size_t(n_head * dk), 3);
  for (int nth : {1, 3}) {
    const auto b = make_cpu_backend(nth);
    for (int32_t pos : {0, 5, 299}) {
      for (int window : {0, 1, 7}) {
        attention_params p{n_head, 0.3f, 0.0f, window};
        std::vector<float> out(size_t(n_head * dv));
        b->attention(kv, q.data(), &pos, 1, p, out.data());
        const int first = window > 0 ? std::max(0, pos - window + 1) : 0;
        for (int h = 0; h < n_head; ++h) {
          for (int d = 0; d < dv; ++d) {
            double mean = 0;
            for (int s = first; s <= pos; ++s) mean += vals[size_t(s * dv + d)];
            mean /= double(pos - first + 1);
            EXPECT_NEAR(out[size_t(h * dv + d)], mean, 1e-5) << "pos " << pos << " window " << window;
          }
        }
      }
    }
  }
}

// A NaN score must come out of attention as NaN (expect_nan_scores_come_out, op_cases.h), on every
// attend this host runs and the scalar one, with one thread and with parts merged across three.
TEST(attention, a_nan_score_comes_out_as_nan) {
  std::vector<const cpu::kernel_table*> tables = host_attend_tables();
  tables.push_back(&cpu::scalar_kernels());
  for (const cpu::kernel_table* kt : tables)
    for (int nth : {1, 3})
      expect_nan_scores_come_out(*cpu::make_cpu_backend(nth, *kt), std::string(kt->attend_isa) + " threads " + std::to_string(nth));
}

// Two visible keys with scores a and b: weights are e^a / (e^a + e^b) and e^b / (e^a + e^b), even
// when the larger score arrives second (the online softmax must rescale what it accumulated).
TEST(attention, two_keys_softmax_weights) {
  const int n_slots = 130, dk = 4, dv = 3;  // keys in slot 1 and slot 129: two different chunks
  std::vector<float> k(size_t(n_slots * dk), 0.0f), v(size_t(n_slots * dv), 0.0f);
  std::vector<int32_t> slot_pos(size_t(n_slots), -1);
  slot_pos[1] = 10;
  slot_pos[129] = 11;
  k[1 * dk + 0] = 1.0f;    // score a = q0 * 1
  k[129 * dk + 0] = 3.0f;  // score b = q0 * 3
  const float va[dv] = {1.0f, 0.0f, -2.0f}, vb[dv] = {0.0f, 4.0f, 1.0f};
  std::copy(va, va + dv, v.begin() + 1 * dv);
  std::copy(vb, vb + dv, v.begin() + 129 * dv);
  kv_layer_view kv{dtype::f32, k.data(), v.data(), slot_pos.data(), n_slots, 1, dk, dv};
  const float q[dk] = {0.7f, 0.0f, 0.0f, 0.0f};
  const int32_t pos = 11;
  const auto b = make_cpu_backend(1);
  attention_params p{1, 1.0f, 0.0f, 0};
  float out[dv];
  b->attention(kv, q, &pos, 1, p, out);
  const double wa = 1.0 / (1.0 + std::exp(0.7 * 3.0 - 0.7)), wb = 1.0 - wa;
  for (int d = 0; d < dv; ++d) EXPECT_NEAR(out[d], wa * va[d] + wb * vb[d], 1e-6) << d;
}

// A view that says where the stored keys end (n_live: what the KV cache's views say) gives the
// bits of one that leaves every slot live, with the bound inside a chunk, on a chunk's edge and
// past a segment of attend_segment_slots; with no live slot, the output of no visible key (zeros).
TEST(attention, live_slot_bound_changes_no_bit) {
  const kv_shape shape{dtype::f16, 2100, 2, 16, 16};
  const attention_params p{4, 0.25f, 0.0f, 0};
  for (int64_t live : {int64_t(0), int64_t(1), int64_t(63), int64_t(64), int64_t(65), int64_t(1030), int64_t(2100)}) {
    kv_fixture f(shape, 11);
    for (int64_t s = 0; s < shape.n_slots; ++s) f.slot_pos[size_t(s)] = s < live ? int32_t(s) : -1;
    for (int64_t n_tok : {int64_t(1), int64_t(5)}) {
      std::vector<int32_t> pos(static_cast<size_t>(n_tok));
      for (int64_t t = 0; t < n_tok; ++t) pos[size_t(t)] = int32_t(std::max<int64_t>(live - n_tok + t, 0));
      const auto q = random_floats(size_t(n_tok * p.n_head * shape.head_dim_k), 12);
      const size_t n_out = size_t(n_tok * p.n_head * shape.head_dim_v);
      for (int nth : {1, 2}) {
        const auto b = make_cpu_backend(nth);
        std::vector<float> all(n_out, NAN), bounded(n_out, NAN);
        kv_layer_view view = f.view();
        b->attention(view, q.data(), pos.data(), n_tok, p, all.data());
        view.n_live = live;
        b->attention(view, q.data(), pos.data(), n_tok, p, bounded.data());
        EXPECT_TRUE(bit_equal(all.data(), bounded.data(), n_out)) << "live " << live << " tokens " << n_tok << " threads " << nth;
        if (live == 0) {
          EXPECT_EQ(bounded, std::vector<float>(n_out, 0.0f));
        }
      }
    }
  }
}

}  // namespace
}  // namespace glia::test
