// The ISA kernels against their scalar twins: vec_dot within rounding of the reference, the
// attention helpers, glu, and the activation quantizers bit for bit (including ties, subnormals and
// non-finite values).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/ref/ref_ops.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "harness.h"
#include "op_cases.h"
#include "quant/activation.h"

namespace glia::test {
namespace {

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
    // Every weight type has matmul kernels and takes their dot, from the best ISA that has them.
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::q2_k,
                    dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs}) {
      ASSERT_NE(k.mm(t), nullptr) << type_info(t).name;
      EXPECT_STREQ(k.vec_dot_isa(t), k.mm_isa_by_id[uint32_t(t)]) << type_info(t).name;
    }
    EXPECT_GT(checked, 0);
  }
}

// Dots that take the reference's steps in its order (NEON's) give its bits, not only its value
// within rounding: integer sums are exact, and the float steps are the same operations.
TEST(kernels, neon_vec_dots_reproduce_reference_bits) {
  const cpu::kernel_table& k = cpu::kernels();
#if defined(__aarch64__)
  for (dtype t : {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::iq4_nl, dtype::q2_k, dtype::q3_k,
                  dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_xs, dtype::f32, dtype::f16, dtype::bf16})
    EXPECT_STREQ(k.vec_dot_isa(t), "neon") << type_info(t).name;
#endif
  int checked = 0;
  for (dtype t : weight_types()) {
    if (std::string(k.vec_dot_isa(t)) != "neon") continue;
    const type_traits& tt = type_info(t);
    const type_traits& at = type_info(tt.dot_type);
    for (int64_t n_in : awkward_n_in(t)) {
      for (float range : {1.0f, 1e-3f, 300.0f}) {
        const test_weight w = make_weight(t, n_in, 8, uint32_t(n_in) + 7);
        const auto x = random_floats(size_t(n_in), uint32_t(n_in) + 8, -range, range);
        std::vector<uint8_t> act(row_bytes(at, n_in));
        at.quantize_row(x.data(), act.data(), n_in);
        for (int r = 0; r < 8; ++r) {
          const float want = tt.vec_dot(w.view.row(r), act.data(), n_in), got = k.vec_dot(t)(w.view.row(r), act.data(), n_in);
          ASSERT_TRUE(bit_equal(&got, &want, 1)) << tt.name << " n_in " << n_in << " row " << r << ": " << got << " against " << want;
        }
        ++checked;
      }
    }
  }
#if defined(__aarch64__)
  EXPECT_GT(checked, 0);
#endif
}

// The ISA attend against the portable one on groups of heads with odd head sizes, f16 and f32
// rows, soft-capping, and slot lists longer than a chunk or a single slot.
// Every ISA's attend the host runs (AVX2, and AVX-512 where present; NEON on aarch64) against the
// scalar loop.
TEST(kernels, isa_attend_matches_scalar) {
  if (has_avx2() && has_fma() && has_f16c()) {
    EXPECT_STREQ(cpu::kernels_up_to(cpu::isa_level::avx2).attend_isa, "avx2");
  }
  for (const cpu::kernel_table* kt : host_attend_tables()) {
    const cpu::kernel_table& k = *kt;
    const std::string name = k.attend_isa;
    struct shape {
      int n_q, dk, dv;
      int64_t n_slots;
      float softcap;
    };
    for (const shape& sh : {shape{8, 64, 64, 150, 0.0f}, shape{1, 40, 24, 1, 0.0f}, shape{3, 13, 9, 64, 0.0f},
                            shape{5, 32, 32, 200, 2.0f}, shape{2, 128, 128, 300, 0.0f}}) {
      for (bool f16 : {true, false}) {
        const int64_t slots_total = sh.n_slots + 17;
        const auto kf = random_floats(size_t(slots_total * sh.dk), 1, -2.0f, 2.0f);
        const auto vf = random_floats(size_t(slots_total * sh.dv), 2);
        std::vector<uint16_t> kh(kf.size()), vh(vf.size());
        for (size_t i = 0; i < kf.size(); ++i) kh[i] = f32_to_fp16(kf[i]);
        for (size_t i = 0; i < vf.size(); ++i) vh[i] = f32_to_fp16(vf[i]);
        // Slots with gaps (as masked or empty slots leave), for one token, or for 3 tokens that see
        // growing prefixes of them (a causal prefill tile).
        const int n_tok = sh.n_q <= 3 ? 3 : 1;
        const int64_t words = (slots_total + 63) / 64;
        std::vector<uint64_t> vis(size_t(n_tok * words), 0);
        for (int t = 0; t < n_tok; ++t) {
          int64_t seen = 0;
          for (int64_t s = 0; s < slots_total && seen < sh.n_slots - 2 * (n_tok - 1 - t); ++s)
            if (s % 9 != 4) {
              vis[size_t(t * words + s / 64)] |= uint64_t(1) << (s % 64);
              ++seen;
            }
        }
        const auto q = random_floats(size_t(n_tok * sh.n_q * sh.dk), 3);
        cpu::attend_job j;
        j.q = q.data();
        j.q_stride = int64_t(sh.n_q) * sh.dk;
        j.out_stride = int64_t(sh.n_q) * sh.dv;
        j.n_tok = n_tok;
        j.n_q = sh.n_q;
        j.dk = sh.dk;
        j.dv = sh.dv;
        j.f16 = f16;
        j.k = f16 ? static_cast<const void*>(kh.data()) : kf.data();
        j.v = f16 ? static_cast<const void*>(vh.data()) : vf.data();
        j.k_stride = sh.dk;
        j.v_stride = sh.dv;
        j.n_slots = slots_total;
        j.vis = vis.data();
        j.vis_words = words;
        j.scale = 0.3f;
        j.softcap = sh.softcap;
        cpu::aligned_buffer scratch;
        const size_t floats = cpu::attend_scratch_floats(n_tok * sh.n_q, sh.dk, sh.dv);
        std::vector<float> want(size_t(n_tok * sh.n_q * sh.dv)), got(want.size());
        j.out = want.data();
        cpu::scalar_attend(j, reinterpret_cast<float*>(scratch.get(floats * 4)));
        j.out = got.data();
        k.attend(j, reinterpret_cast<float*>(scratch.get(floats * 4)));
        EXPECT_LE(nmse(got, want), 1e-11)
            << name << " n_q " << sh.n_q << " dk " << sh.dk << " slots " << sh.n_slots << " f16 " << f16;
      }
    }
  }
}

// The ISA glu against the scalar loop: GELU bit for bit (the same fp16 table), SiLU within a few
// ulp (vector exp), on awkward lengths and on the edges: saturation of e^-x both ways, the GELU
// clamps at +-10, fp16 rounding ties, zeros of both signs, infinities and NaN.
TEST(kernels, isa_glu_matches_scalar) {
  const cpu::kernel_table& k = cpu::kernels();
  if (has_avx2() && has_fma() && has_f16c()) {
    EXPECT_STREQ(k.glu_isa, "avx2");
  }
#if defined(__aarch64__)
  EXPECT_STREQ(k.glu_isa, "neon");
#endif
  const float inf = std::numeric_limits<float>::infinity();
  const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 10.0f, -10.0f, 9.999f, -9.999f, 87.0f, -87.0f, 88.0f, -88.0f,
                         88.5f, -88.5f, 100.0f, -100.0f, 1e30f, -1e30f, inf, -inf, 1.0009765625f, 2.00048828125f};
  for (int64_t n : {1, 7, 8, 9, 33, 4099}) {
    for (activation act : {activation::silu, activation::gelu_tanh}) {
      std::vector<float> g = random_floats(size_t(n), uint32_t(n), -20.0f, 20.0f);
      for (size_t i = 0; i < g.size() && i < std::size(edges); ++i) g[g.size() - 1 - i] = edges[i];
      const std::vector<float> u = random_floats(size_t(n), uint32_t(n) + 1, -3.0f, 3.0f);
      std::vector<float> want(g.size()), got(g.size());
      cpu::scalar_glu(g.data(), u.data(), want.data(), n, act);
      k.glu(g.data(), u.data(), got.data(), n, act);
      for (size_t i = 0; i < g.size(); ++i) {
        if (act == activation::gelu_tanh) {
          EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "gelu(" << g[i] << ")";
        } else if (std::isfinite(want[i])) {
          // (SiLU below -88, |result| < 1e-36, may come out as -0: e^-x saturates to inf at 88.)
          EXPECT_NEAR(got[i], want[i], 4e-7f * std::fabs(want[i]) + 1e-36f) << "silu(" << g[i] << ") * " << u[i];
        } else {
          EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "silu(" << g[i] << ")";
          if (!std::isnan(want[i])) {
            EXPECT_EQ(got[i], want[i]) << "silu(" << g[i] << ")";
          }
        }
      }
      // An element's bits never depend on how the range is cut (the backend splits it across
      // threads, and the cut moves with the batch size).
      std::vector<float> pieces(g.size());
      for (int64_t b = 0, step = 1; b < n; b += step, step = step % 11 + 2)
        k.glu(g.data() + b, u.data() + b, pieces.data() + b, std::min(step, n - b), act);
      for (size_t i = 0; i < g.size(); ++i)
        EXPECT_EQ(std::bit_cast<uint32_t>(pieces[i]), std::bit_cast<uint32_t>(got[i])) << "element " << i << " of " << n;
    }
  }
}

// The reference's order of sixteen partial sums is still a sum of squares to double precision: its
// float mean equals the one from a long double sum of the same float squares.
TEST(kernels, reference_sum_of_squares_is_accurate) {
  for (int64_t n : {1, 5, 16, 17, 2048, 5000}) {
    const std::vector<float> x = random_floats(size_t(n), uint32_t(n), -30.0f, 30.0f);
    long double exact = 0;
    for (float v : x) exact += static_cast<long double>(v * v);
    EXPECT_NEAR(ref::sum_of_squares(x.data(), n), double(exact), 1e-13 * double(exact)) << n;
    EXPECT_EQ(float(ref::sum_of_squares(x.data(), n) / double(n)), float(double(exact) / double(n))) << n;
  }
}

// The rms_norm row with the ISA sum of squares against the reference bit for bit, on lengths
// around its 16-element steps and 8- (AVX2) or 4-element (NEON) tails, with and without weights, at scales where the
// squares round in float, over a range of magnitudes where the double sums round (and so depend on
// their order), and with subnormals, a zero row, infinities and NaN.
TEST(kernels, isa_rms_norm_matches_reference) {
  const cpu::kernel_table& k = cpu::kernels();
  if (has_avx2() && has_fma() && has_f16c()) {
    EXPECT_NE(k.sum_of_squares, &ref::sum_of_squares) << "the AVX2 sum of squares is not in the table";
  }
#if defined(__aarch64__)
  EXPECT_NE(k.sum_of_squares, &ref::sum_of_squares) << "the NEON sum of squares is not in the table";
#endif
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 64, 2048, 4099}) {
    for (float scale : {1e-20f, 1.0f, 3e3f, 1e19f}) {
      for (int kind = 0; kind < 5; ++kind) {
        std::vector<float> x = random_floats(size_t(n), uint32_t(n * 7 + kind), -scale, scale);
        if (kind == 1) std::fill(x.begin(), x.end(), 0.0f);
        // Magnitudes over 2^-30..2^30, so that the double sums round and their order shows.
        if (kind == 4)
          for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(x[i] / scale, int(i * 37 % 61) - 30);
        if (kind == 2) x[size_t(n) / 2] = 1e-41f;
        if (kind == 3) x[size_t(n) - 1] = n % 2 ? inf : std::numeric_limits<float>::quiet_NaN();
        // The double sum itself, where a change of order shows in the last bits.
        const double sum_want = ref::sum_of_squares(x.data(), n), sum_got = k.sum_of_squares(x.data(), n);
        if (!std::isnan(sum_want)) {
          ASSERT_EQ(std::bit_cast<uint64_t>(sum_got), std::bit_cast<uint64_t>(sum_want))
              << "n " << n << " scale " << scale << " kind " << kind;
        }
        const std::vector<float> w = random_floats(size_t(n), uint32_t(n) + 3, -2.0f, 2.0f);
        for (const float* wp : {static_cast<const float*>(nullptr), w.data()}) {
          std::vector<float> want(x.size()), got(x.size());
          ref::rms_norm_row(x.data(), wp, want.data(), n, 1e-6f);
          ref::rms_norm_row(x.data(), wp, got.data(), n, 1e-6f, k.sum_of_squares);
          for (size_t i = 0; i < x.size(); ++i)
            ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                << "n " << n << " scale " << scale << " kind " << kind << " weighted " << (wp != nullptr) << " element " << i;
        }
      }
    }
  }
}

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
    // Which format: the first table type whose quantize_row is this reference, else Q8_0 or Q8_1
    // (their x86 variants).
    dtype fmt_type = q.reference == quant::quantize_row_q8_1_x86 ? dtype::q8_1 : dtype::q8_0;
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
  if (has_avx2() && has_fma() && has_f16c()) {
    EXPECT_GE(k.n_quantizers, 5);
  }
#if defined(__aarch64__)
  EXPECT_EQ(k.n_quantizers, 5);  // quantize_neon.cpp
#endif
}

// --cpu-isa: a capped CPU backend runs the kernels of that ISA where the host has it, refuses it
// where it has not, and leaves the GPU and reference backends alone.
TEST(kernels, cpu_backend_capped_by_isa) {
  auto scalar = make_cpu_backend(1, true, "scalar");
  ASSERT_TRUE(scalar) << scalar.message();
  EXPECT_EQ((*scalar)->cpu_isa(), "scalar");
  const cpu_features& f = host_cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const bool vnni = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
#if defined(__aarch64__)
  const bool neon = true;  // in AArch64's base instruction set
#else
  const bool neon = false;
#endif
  for (const auto& [isa, host_has] : {std::pair{"avx2", avx2}, std::pair{"avx512vnni", vnni}, std::pair{"neon", neon}}) {
    auto b = make_cpu_backend(1, true, isa);
    ASSERT_EQ(bool(b), host_has) << isa;
    if (b) EXPECT_EQ((*b)->cpu_isa(), isa);
    else EXPECT_NE(b.message().find("cannot run the " + std::string(isa)), std::string::npos) << b.message();
  }
  auto best = make_cpu_backend(1, true, "best");
  ASSERT_TRUE(best);
  EXPECT_EQ((*best)->cpu_isa(), cpu::kernels().isa);
  EXPECT_FALSE(make_cpu_backend(1, true, "avx9"));
  // "auto" with a cap means the CPU; a cap with a backend that is not the CPU is an error.
  auto cpu_auto = make_backend("auto", 1, true, "scalar");
  ASSERT_TRUE(cpu_auto) << cpu_auto.message();
  EXPECT_EQ((*cpu_auto)->name(), "cpu");
  EXPECT_FALSE(make_backend("ref", 1, true, "avx2"));
  EXPECT_FALSE(make_backend("cuda", 1, true, "avx2"));
  EXPECT_EQ(make_ref_backend()->cpu_isa(), "");
}

}  // namespace
}  // namespace glia::test
