// Matmul properties beyond "close to the reference": batch invariance (bit-exact), bit-exactness of
// the threading/tiling with the scalar kernels, each ISA kernel against its scalar twin, and a few
// results known from arithmetic alone.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "harness.h"

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

// Each ISA kernel against the reference vec_dot of its type on many rows of odd block counts.
TEST(kernels, isa_vec_dot_matches_reference) {
  const cpu::kernel_table& k = cpu::kernels();
  int checked = 0;
  for (dtype t : weight_types()) {
    const type_traits& tt = type_info(t);
    if (k.vec_dot(t) == tt.vec_dot) continue;  // this host runs the reference for t
    const type_traits& at = type_info(tt.dot_type);
    for (int64_t n_in : awkward_n_in(t)) {
      const test_weight w = make_weight(t, n_in, 16, uint32_t(n_in));
      const auto x = random_floats(size_t(n_in), 3, -5.0f, 5.0f);
      std::vector<uint8_t> act(row_bytes(at, n_in));
      at.quantize_row(x.data(), act.data(), n_in);
      std::vector<float> want(16), got(16);
      for (int r = 0; r < 16; ++r) {
        want[size_t(r)] = tt.vec_dot(w.view.row(r), act.data(), n_in);
        got[size_t(r)] = k.vec_dot(t)(w.view.row(r), act.data(), n_in);
      }
      EXPECT_LE(nmse(got, want), 1e-9) << tt.name << " n_in " << n_in << " (" << k.vec_dot_isa(t) << ")";
      ++checked;
    }
  }
  if (has_avx2() && has_fma() && has_f16c()) {
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q8_0, dtype::q4_0, dtype::q4_k, dtype::q6_k})
      EXPECT_STREQ(k.vec_dot_isa(t), "avx2") << type_info(t).name;
    EXPECT_GT(checked, 0);
  }
}

// Attention helpers of the kernel table against plain loops.
TEST(kernels, isa_attention_helpers_match_scalar) {
  const cpu::kernel_table& k = cpu::kernels();
  const cpu::kernel_table& s = cpu::scalar_kernels();
  for (int64_t n : {1, 7, 8, 31, 64, 129}) {
    const auto a = random_floats(size_t(n), 1), b = random_floats(size_t(n), 2);
    std::vector<uint16_t> bh(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) bh[size_t(i)] = f32_to_fp16(b[size_t(i)]);
    EXPECT_NEAR(k.dot_f32(a.data(), b.data(), n), s.dot_f32(a.data(), b.data(), n), 1e-5 * double(n));
    EXPECT_NEAR(k.dot_f32_f16(a.data(), bh.data(), n), s.dot_f32_f16(a.data(), bh.data(), n), 1e-5 * double(n));
    std::vector<float> y1 = a, y2 = a;
    k.axpy_f16(0.75f, bh.data(), y1.data(), n);
    s.axpy_f16(0.75f, bh.data(), y2.data(), n);
    EXPECT_LE(nmse(y1, y2), 1e-12);
    y1 = a, y2 = a;
    k.axpy_f32(-1.25f, b.data(), y1.data(), n);
    s.axpy_f32(-1.25f, b.data(), y2.data(), n);
    EXPECT_LE(nmse(y1, y2), 1e-12);
    y1 = a, y2 = a;
    k.scale_f32(y1.data(), 0.3f, n);
    s.scale_f32(y2.data(), 0.3f, n);
    EXPECT_TRUE(bit_equal(y1.data(), y2.data(), size_t(n)));
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

namespace glia::test {
namespace {

// Rows that stress activation quantizers: random data at several scales, exact ties (block maxima
// of 127 make the Q8_0 scale 1, so x.5 values are halfway), duplicated peaks of both signs, zero
// blocks, subnormals, fp16 overflow and rounding edges, and one block with a NaN and an infinity.
std::vector<std::vector<float>> quantizer_stress_rows(int64_t n) {
  std::vector<std::vector<float>> rows;
  for (float scale : {1e-3f, 1.0f, 300.0f, 7e4f}) rows.push_back(random_floats(size_t(n), uint32_t(scale * 10) + 1, -scale, scale));
  std::vector<float> ties(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ties[size_t(i)] = i % 32 == 0 ? 127.0f : float(i % 50 - 25) + 0.5f;
  rows.push_back(ties);
  std::vector<float> peaks = random_floats(size_t(n), 9);
  for (int64_t i = 0; i < n; i += 16) peaks[size_t(i)] = (i / 16) % 2 ? 3.0f : -3.0f;  // equal |peak|, both signs
  rows.push_back(peaks);
  std::vector<float> edges = random_floats(size_t(n), 10);
  const float edge_values[] = {0.0f,     -0.0f,      1e-40f,   -1e-40f,  3e-8f,    5.9604645e-8f, 2.9802322e-8f,
                               6.1e-5f,  65504.0f,   65519.0f, 65520.0f, -65536.0f, 1e30f,        -1e-30f};
  for (size_t i = 0; i < std::size(edge_values) && i < size_t(n); ++i) edges[i * 7 % size_t(n)] = edge_values[i];
  for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) edges[size_t(n - 1 - i)] = 0.0f;  // a zero block at the end
  rows.push_back(edges);
  std::vector<float> tiny(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) tiny[size_t(i)] = float(i % 7 - 3) * 1e-41f;  // subnormal block maxima
  rows.push_back(tiny);
  std::vector<float> bad = random_floats(size_t(n), 11);
  bad[3] = NAN;
  bad[size_t(n / 2)] = INFINITY;
  rows.push_back(bad);
  return rows;
}

TEST(kernels, isa_quantizers_reproduce_reference_bits) {
  const cpu::kernel_table& k = cpu::kernels();
  const int64_t n = 3 * 256;
  for (int i = 0; i < k.n_quantizers; ++i) {
    const auto& q = k.quantizers[i];
    // Which format: the first table type whose quantize_row is this reference, else Q8_0 (x86).
    dtype fmt_type = dtype::q8_0;
    for (const type_traits& t : all_types())
      if (t.quantize_row == q.reference) fmt_type = t.type;
    const type_traits& t = type_info(fmt_type);
    for (int64_t len : {n, t.block_elems == 1 ? n + 5 : n}) {
      int row_index = 0;
      for (const auto& row : quantizer_stress_rows(len)) {
        std::vector<uint8_t> want(row_bytes(t, len)), got(want.size());
        q.reference(row.data(), want.data(), len);
        q.fast(row.data(), got.data(), len);
        EXPECT_EQ(want, got) << t.name << " twin " << i << " from " << q.isa << ", stress row " << row_index << ", n " << len;
        ++row_index;
      }
    }
  }
  if (has_avx2() && has_fma() && has_f16c()) EXPECT_GE(k.n_quantizers, 4);
}

}  // namespace
}  // namespace glia::test
