// Matmul properties beyond "close to the reference": batch invariance (bit-exact), bit-exactness of
// the threading/tiling with the scalar kernels, and results known from arithmetic alone.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"
#include "core/fp16.h"
#include "harness.h"
#include "op_cases.h"

namespace glia::test {
namespace {

// Row t of y computed alone (n_tok = 1) must equal row t of a batched call bit for bit.
void expect_batch_invariant(backend& b, dtype t, int64_t n_in, int64_t n_out, int64_t n_tok) {
  const test_weight w = make_weight(t, n_in, n_out, 77);
  const auto x = random_floats(size_t(n_in * n_tok), 78, -3.0f, 3.0f);
  std::vector<float> batched(size_t(n_out * n_tok));
  b.matmul(w.view, x.data(), n_tok, batched.data());
  std::vector<float> single(static_cast<size_t>(n_out));
  for (int64_t tok = 0; tok < n_tok; ++tok) {
    b.matmul(w.view, x.data() + tok * n_in, 1, single.data());
    ASSERT_TRUE(bit_equal(single.data(), batched.data() + tok * n_out, size_t(n_out)))
        << type_label(t) << " n_in " << n_in << " token " << tok << " of " << n_tok;
  }
}

TEST(matmul, batch_invariant_every_type_and_thread_count) {
  for (int nth : {1, 2, 3}) {
    const auto b = make_cpu_backend(nth);
    for (dtype t : weight_types()) {
      SCOPED_TRACE(fmt::format("{} threads", nth));
      expect_batch_invariant(*b, t, awkward_n_in(t)[1], 37, 7);
    }
  }
}

// Large rows make the activation tile hold few tokens, so a 40-token batch spans several token
// tiles and several row tiles; results must still not depend on the batch.
TEST(matmul, batch_invariant_across_tiles) {
  const auto b = make_cpu_backend(3);
  expect_batch_invariant(*b, dtype::f32, 4096, 70, 40);
  expect_batch_invariant(*b, dtype::q4_0, 4096, 70, 40);
  expect_batch_invariant(*b, dtype::q6_k, 4096, 70, 40);
}

// matmul_shared (q, k, v or gate, up in one job) must give every matrix the bits of its own matmul:
// prepared matrices of one type, of two types that read the same activations (Q4_K and Q6_K, as in
// Q4_K_M files), a mix of prepared and unprepared ones (the fallback), for decode and prefill.
TEST(matmul, shared_input_matches_separate_matmuls) {
  struct group {
    std::vector<dtype> types;
    bool prepare_all;
  };
  const group groups[] = {{{dtype::q4_0, dtype::q4_0, dtype::q4_0}, true},
                          {{dtype::q4_k, dtype::q4_k, dtype::q6_k}, true},
                          {{dtype::q8_0, dtype::q8_0}, false},
                          {{dtype::f16, dtype::q4_0}, true}};
  const int64_t n_in = 512;
  const int64_t n_outs[] = {72, 24, 41};
  for (int nth : {1, 2, 3}) {
    const auto b = make_cpu_backend(nth);
    for (const group& g : groups) {
      std::vector<test_weight> ws;
      std::vector<weight_view> views;
      for (size_t i = 0; i < g.types.size(); ++i) {
        ws.push_back(make_weight(g.types[i], n_in, n_outs[i], uint32_t(90 + i)));
        if (g.prepare_all || i == 0) b->prepare_weight(ws.back().view);
      }
      for (const test_weight& w : ws) views.push_back(w.view);
      for (int64_t n_tok : {int64_t(1), int64_t(3), int64_t(37)}) {
        const auto x = random_floats(size_t(n_in * n_tok), 91);
        std::vector<std::vector<float>> shared(views.size()), separate(views.size());
        std::vector<float*> ys;
        for (size_t i = 0; i < views.size(); ++i) {
          shared[i].assign(size_t(n_outs[i] * n_tok), NAN);
          separate[i].resize(shared[i].size());
          ys.push_back(shared[i].data());
          b->matmul(views[i], x.data(), n_tok, separate[i].data());
        }
        b->matmul_shared(views, x.data(), n_tok, ys);
        for (size_t i = 0; i < views.size(); ++i)
          EXPECT_TRUE(bit_equal(shared[i].data(), separate[i].data(), shared[i].size()))
              << type_label(g.types[i]) << " matrix " << i << ", " << n_tok << " tokens, " << nth << " threads";
      }
    }
  }
}

// matmul_glu (gate, up and the activation in one op; the CPU fuses the activation into prompt
// matmuls on prepared panels) must give the bits of matmul, matmul and glu: with every host ISA's
// kernels and 1-3 threads, for decode (unfused), a few tokens and prompts of several token tiles,
// for gate and up of one type, of two types (Q4_K and Q6_K: blocks of different sizes, unfused),
// float weights, and unprepared weights (unfused).
TEST(matmul, glu_projection_matches_separate_ops) {
  struct group {
    dtype gate, up;
    bool prepare;
  };
  const group groups[] = {{dtype::q4_0, dtype::q4_0, true},
                          {dtype::q8_0, dtype::q8_0, true},
                          {dtype::q4_k, dtype::q4_k, true},
                          {dtype::q4_k, dtype::q6_k, true},
                          {dtype::f16, dtype::f16, true},
                          {dtype::q8_0, dtype::q8_0, false}};
  const int64_t n_in = 2048, n_out = 605;  // a short last panel
  const int64_t token_counts[] = {1, 3, 4, 37, 100};
  // The separate matmuls, once per group and batch: every ISA level and thread count gives the
  // reference's matmul bits (mm_kernels.*reproduce_reference_backend_bits), so those of one
  // configuration stand for all; what differs per configuration below is only the fused op.
  struct product {
    std::vector<float> x, gate, up;
  };
  const std::vector<cpu::isa_level> levels = host_mm_levels();
  if (levels.empty()) GTEST_SKIP() << "no x86 matmul kernel level on this host";
  std::vector<test_weight> weights;
  weights.reserve(2 * std::size(groups));
  std::vector<product> products;
  const auto fast = cpu::make_cpu_backend(2, cpu::kernels_up_to(levels.back()));
  for (const group& g : groups) {
    weights.push_back(make_weight(g.gate, n_in, n_out, 31));
    weights.push_back(make_weight(g.up, n_in, n_out, 32));
    for (int64_t n_tok : token_counts) {
      product& p = products.emplace_back();
      p.x = random_floats(size_t(n_in * n_tok), uint32_t(n_tok), -2.0f, 2.0f);
      p.gate.resize(size_t(n_out * n_tok));
      p.up.resize(p.gate.size());
      fast->matmul(weights[weights.size() - 2].view, p.x.data(), n_tok, p.gate.data());
      fast->matmul(weights.back().view, p.x.data(), n_tok, p.up.data());
    }
  }
  for (cpu::isa_level level : levels) {
    for (int nth : {1, 2, 3}) {
      for (size_t gi = 0; gi < std::size(groups); ++gi) {
        const group& g = groups[gi];
        const test_weight &gate = weights[2 * gi], &up = weights[2 * gi + 1];
        // A backend per group, so that unprepared groups stay unprepared.
        const auto b = cpu::make_cpu_backend(nth, cpu::kernels_up_to(level));
        if (g.prepare) {
          b->prepare_weight(gate.view);
          b->prepare_weight(up.view);
        }
        for (activation act : {activation::silu, activation::gelu_tanh}) {
          for (size_t ti = 0; ti < std::size(token_counts); ++ti) {
            const int64_t n_tok = token_counts[ti];
            const product& p = products[gi * std::size(token_counts) + ti];
            std::vector<float> want(p.gate.size());
            b->glu(p.gate.data(), p.up.data(), want.data(), n_tok, n_out, act);
            std::vector<float> got(want.size(), NAN), up_room(want.size(), NAN);
            b->matmul_glu(gate.view, up.view, p.x.data(), n_tok, act, got.data(), up_room.data(), {});
            EXPECT_TRUE(bit_equal(got.data(), want.data(), want.size()))
                << type_label(g.gate) << "/" << type_label(g.up) << (g.prepare ? "" : " unprepared") << ", "
                << cpu::kernels_up_to(level).isa << ", " << nth << " threads, " << n_tok << " tokens, "
                << (act == activation::silu ? "silu" : "gelu");
          }
        }
      }
    }
  }
}

// Where cpu::matmul_glu fuses (and so where the test above checks the fused bits): prompts on
// prepared panels of kernels that read the same activations and cut the same row blocks, except
// the AMX kernels (all tokens per call); not decode, nor unprepared weights.
TEST(matmul, glu_fuses_where_it_applies) {
  thread_pool pool(2);
  const int64_t n_in = 512, n_out = 77;
  for (cpu::isa_level level : host_mm_levels()) {
    const cpu::kernel_table& k = cpu::kernels_up_to(level);
    const bool amx = level == cpu::isa_level::avx512amx;
    for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::q4_k, dtype::f16}) {
      const test_weight gate = make_weight(t, n_in, n_out, 51), up = make_weight(t, n_in, n_out, 52);
      huge_page_arena arena;
      cpu::prepared_weight pg, pu;
      ASSERT_TRUE(cpu::prepare_weight(pool, k, gate.view, pg, arena));
      ASSERT_TRUE(cpu::prepare_weight(pool, k, up.view, pu, arena));
      const bool all_tokens = k.mm(t)->tile_tokens > 0;
      EXPECT_EQ(all_tokens, amx && t != dtype::f16) << type_label(t) << " " << k.isa;
      cpu::matmul_scratch scratch;
      for (int64_t n_tok : {int64_t(3), int64_t(4), int64_t(20)}) {
        const auto x = random_floats(size_t(n_in * n_tok), 53);
        std::vector<float> out(size_t(n_out * n_tok)), up_out(out.size());
        const bool fused = cpu::matmul_glu(pool, k, gate.view, up.view, x.data(), n_tok, activation::silu,
                                           out.data(), up_out.data(), scratch, &pg, &pu);
        EXPECT_EQ(fused, n_tok >= 4 && !all_tokens) << type_label(t) << " " << k.isa << " " << n_tok << " tokens";
        EXPECT_FALSE(cpu::matmul_glu(pool, k, gate.view, up.view, x.data(), n_tok, activation::silu, out.data(),
                                     up_out.data(), scratch, nullptr, &pu));
      }
    }
  }
}

// decode_share_head (what each worker warms before a decode matmul): with no budget, the heads of
// threads 0..nth-1 together are every panel byte of every matrix exactly once, since the shares of
// a one-token matmul's work list cover it (one stream per thread, or two where the kernels read two);
// with a budget, each thread gets the starts of those spans, at most `budget` bytes in all.
TEST(matmul, decode_share_heads_cover_the_panels) {
  const cpu::kernel_table& k = cpu::kernels();
  if (!k.mm(dtype::q4_0)) GTEST_SKIP() << "no matmul kernels (weight panels) on this host";
  thread_pool pool(1);
  const std::vector<std::vector<dtype>> groups = {
      {dtype::q4_0, dtype::q4_0, dtype::q4_0}, {dtype::q4_k, dtype::q6_k}, {dtype::q8_0}, {dtype::q4_k}};
  const int64_t n_outs[] = {1000, 24, 41};
  for (const auto& types : groups) {
    std::vector<test_weight> ws;
    std::vector<weight_view> views;
    huge_page_arena arena;
    std::vector<cpu::prepared_weight> prepared(types.size());
    std::vector<const cpu::prepared_weight*> ptrs;
    for (size_t i = 0; i < types.size(); ++i) {
      ws.push_back(make_weight(types[i], 512, n_outs[i], uint32_t(40 + i)));
      views.push_back(ws.back().view);
      ASSERT_TRUE(cpu::prepare_weight(pool, k, views.back(), prepared[i], arena)) << type_label(types[i]);
      ptrs.push_back(&prepared[i]);
    }
    const auto matrix_of = [&](const uint8_t* p) {
      for (size_t i = 0; i < prepared.size(); ++i)
        if (p >= prepared[i].panels && p < prepared[i].panels + prepared[i].bytes) return int(i);
      return -1;
    };
    for (int nth : {1, 2, 3, 5}) {
      SCOPED_TRACE(fmt::format("{} threads, {}", nth, type_label(types[0])));
      std::vector<std::span<const uint8_t>> all;
      for (int ith = 0; ith < nth; ++ith) {
        std::span<const uint8_t> head[16];  // up to three spans per matrix
        const size_t n = cpu::decode_share_head(k, views, ptrs, nth, ith, SIZE_MAX, head);
        all.insert(all.end(), head, head + n);
        std::span<const uint8_t> part[16];
        const size_t np = cpu::decode_share_head(k, views, ptrs, nth, ith, 5000, part);
        size_t got = 0;
        for (size_t h = 0; h < np; ++h) {
          const bool starts_a_head = std::any_of(head, head + n, [&](std::span<const uint8_t> s) {
            return s.data() == part[h].data() && s.size() >= part[h].size();
          });
          EXPECT_TRUE(starts_a_head) << "thread " << ith << " span " << h;
          got += part[h].size();
        }
        EXPECT_LE(got, 5000u) << "thread " << ith;
        EXPECT_EQ(np == 0, n == 0) << "thread " << ith;
      }
      // Sorted by address and joined where they meet within a matrix: the matrices, whole.
      std::sort(all.begin(), all.end(), [](auto a, auto b) { return a.data() < b.data(); });
      std::vector<std::span<const uint8_t>> merged;
      for (const auto& s : all) {
        if (!merged.empty() && merged.back().data() + merged.back().size() == s.data() &&
            matrix_of(merged.back().data()) == matrix_of(s.data()))
          merged.back() = std::span<const uint8_t>(merged.back().data(), merged.back().size() + s.size());
        else
          merged.push_back(s);
      }
      ASSERT_EQ(merged.size(), types.size());
      for (size_t i = 0; i < types.size(); ++i) {
        EXPECT_EQ(merged[i].data(), prepared[i].panels) << "matrix " << i;
        EXPECT_EQ(merged[i].size(), prepared[i].bytes) << "matrix " << i;
      }
    }
    // An unprepared matrix: nothing to warm.
    ptrs.back() = nullptr;
    std::span<const uint8_t> head[8];
    EXPECT_EQ(cpu::decode_share_head(k, views, ptrs, 2, 1, SIZE_MAX, head), 0u);
  }
}

// With the scalar kernels the CPU backend calls exactly the reference's quantize_row and vec_dot,
// so anything but identical bits would come from the threading, the tiling or the block-split
// conversion of the activations.
TEST(matmul, scalar_kernels_reproduce_reference_bits) {
  const auto ref = make_ref_backend();
  for (int nth : {1, 2, 3}) {
    const auto cpu = cpu::make_cpu_backend(nth, cpu::scalar_kernels());
    for (dtype t : weight_types()) {
      const int64_t n_in = awkward_n_in(t).back() * 4 + (type_info(t).block_elems == 1 ? 3 : 0);
      const test_weight w = make_weight(t, n_in, 29, 5);
      const int64_t n_tok = 5;
      auto x = random_floats(size_t(n_in * n_tok), 6);
      // Token 0 is all ties: block maxima of 127 give an activation scale of exactly 1, and the
      // other values are halfway between integers, so any difference in how the two backends
      // quantize activations (rounding mode, inverse scale) changes the bits.
      for (int64_t i = 0; i < n_in; ++i) x[size_t(i)] = i % 32 == 0 ? 127.0f : float(i % 50 - 25) + 0.5f;
      std::vector<float> want(size_t(29 * n_tok)), got(want.size());
      ref->matmul(w.view, x.data(), n_tok, want.data());
      cpu->matmul(w.view, x.data(), n_tok, got.data());
      EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size())) << type_label(t) << " threads " << nth;
    }
  }
}

// Arithmetic facts, independent of any reference implementation: Q8_0 blocks with scale 1 and small
// integers hold them exactly, so the dot is an exact integer sum; an F32 identity matrix copies x.
TEST(matmul, exact_integer_results) {
  const auto b = make_cpu_backend(2);
  const int64_t n_in = 96, n_out = 3;
  std::vector<uint8_t> bytes(size_t(n_out) * 3 * 34);
  std::vector<float> x(static_cast<size_t>(n_in));
  for (int64_t i = 0; i < n_in; ++i) x[size_t(i)] = float((i % 11) - 5);  // max |x| = 5: the q8 scale
  // Row r: every weight equals r + 1 (Q8_0 block: fp16 d = 1, qs = r + 1).
  for (int64_t r = 0; r < n_out; ++r) {
    for (int blk = 0; blk < 3; ++blk) {
      uint8_t* p = bytes.data() + size_t(r * 3 + blk) * 34;
      const uint16_t one = f32_to_fp16(1.0f);
      std::memcpy(p, &one, 2);
      std::memset(p + 2, int(r + 1), 32);
    }
  }
  const weight_view w{dtype::q8_0, n_in, n_out, bytes.data(), 3 * 34};
  std::vector<float> y(static_cast<size_t>(n_out));
  b->matmul(w, x.data(), 1, y.data());
  // The activation quantizes with d = max|x| / 127 = 5/127 (stored as fp16), q = round(x / d); the
  // x here are never halfway between two q, so the expected dot is (r + 1) * d16 * sum(q).
  const float d = 5.0f / 127.0f;
  double qsum = 0, qabs = 0;
  for (float v : x) {
    qsum += std::nearbyint(v / d) * double(round_fp16(d));
    qabs += std::fabs(v);
  }
  for (int64_t r = 0; r < n_out; ++r) EXPECT_NEAR(y[size_t(r)], double(r + 1) * qsum, 1e-5 * qabs * double(r + 1)) << r;

  std::vector<float> eye(size_t(n_in * n_in), 0.0f);
  for (int64_t i = 0; i < n_in; ++i) eye[size_t(i * n_in + i)] = 1.0f;
  const weight_view wi{dtype::f32, n_in, n_in, eye.data(), size_t(n_in) * 4};
  std::vector<float> yi(static_cast<size_t>(n_in));
  b->matmul(wi, x.data(), 1, yi.data());
  EXPECT_TRUE(bit_equal(yi.data(), x.data(), size_t(n_in)));
}

}  // namespace
}  // namespace glia::test
