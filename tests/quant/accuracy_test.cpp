// Table-driven accuracy tests: every row of all_types() is quantized, dequantized and dotted on the
// synthetic data of llama.cpp's tests/test-quantize-fns.cpp, with that test's bounds. A new row of
// the table is tested here without further code.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/types.h"
#include "quant_test_util.h"

namespace glia {
namespace {

using test::cosine_data;
using test::dequantize;
using test::quantize;

std::vector<const type_traits*> table_rows() {
  std::vector<const type_traits*> rows;
  for (const type_traits& t : all_types()) rows.push_back(&t);
  return rows;
}

// test-quantize-fns: MAX_QUANTIZATION_TOTAL_ERROR (0.002), _3BITS (0.004), _2BITS (0.0075).
double max_total_error(const type_traits& t) {
  if (t.type == dtype::q2_k) return 0.0075;
  if (t.type == dtype::q3_k) return 0.004;
  return 0.002;
}

// test-quantize-fns: MAX_DOT_PRODUCT_ERROR (0.02), _LOWBIT (0.04) for Q2_K; Q3_K is given the
// low-bit bound too, as its round trip bound is the 3-bit one.
double max_dot_error(const type_traits& t) {
  return t.type == dtype::q2_k || t.type == dtype::q3_k ? 0.04 : 0.02;
}

// Row lengths: one block, an odd number of blocks, several blocks, and llama.cpp's 4096.
std::vector<int64_t> row_lengths(const type_traits& t) {
  const int64_t b = t.block_elems;
  return {b, 3 * b, 7 * b, 16 * b, 4096};
}

// Largest |x - round(x)| allowed for a float format: half a unit in the last place (2^-(p+1)
// relative for p stored mantissa bits), plus half the smallest subnormal step for values near 0.
double float_rounding_bound(const type_traits& t, float x) {
  switch (t.type) {
    case dtype::f32:
      return 0;
    case dtype::f16:
      return std::ldexp(std::fabs(x), -11) + std::ldexp(1.0, -25);
    case dtype::bf16:
      return std::ldexp(std::fabs(x), -8) + std::ldexp(1.0, -134);
    default:
      return -1;
  }
}

class AllTypes : public ::testing::TestWithParam<const type_traits*> {};

INSTANTIATE_TEST_SUITE_P(Table, AllTypes, ::testing::ValuesIn(table_rows()),
                         [](const auto& info) { return test::type_param_name(*info.param); });

// ggml's own measure: sqrt(sum (x - x')^2) / n on 4096 values of cos(i) data.
TEST_P(AllTypes, RoundTripErrorAsInLlamaCpp) {
  const type_traits& t = *GetParam();
  const auto x = cosine_data(0.0f, 4096);
  const auto y = dequantize(t, quantize(t, x), 4096);
  const double err = std::sqrt(test::sum_sq_diff(x, y)) / 4096;
  EXPECT_LT(err, max_total_error(t));
}

// The same bound at other lengths and phases. sqrt(sum)/n shrinks like 1/sqrt(n) for a fixed
// per-element error, so it is normalized to ggml's n = 4096: sqrt(sum / n) / 64.
TEST_P(AllTypes, RoundTripErrorAtManyLengths) {
  const type_traits& t = *GetParam();
  for (int64_t n : row_lengths(t)) {
    for (float offset : {0.0f, 0.5f, 1.0f, 3.0f, 7.25f, 100.0f}) {
      const auto x = cosine_data(offset, n);
      const auto y = dequantize(t, quantize(t, x), n);
      const double err = std::sqrt(test::sum_sq_diff(x, y) / double(n)) / 64;
      EXPECT_LT(err, max_total_error(t)) << "n=" << n << " offset=" << offset;
    }
  }
}

TEST_P(AllTypes, RoundTripScalesWithTheData) {
  // Quantization is relative: amplitude 200 gives 100x the error of amplitude 2.
  const type_traits& t = *GetParam();
  const auto x = cosine_data(2.0f, 4096, 200.0f);
  const auto y = dequantize(t, quantize(t, x), 4096);
  const double err = std::sqrt(test::sum_sq_diff(x, y)) / 4096;
  EXPECT_LT(err, 100 * max_total_error(t));
}

TEST(FloatFormats, RoundEachValueToNearest) {
  int n_float_types = 0;
  for (const type_traits& t : all_types()) {
    if (t.is_quantized) continue;
    ++n_float_types;
    const auto x = cosine_data(0.3f, 1000);
    const auto y = dequantize(t, quantize(t, x), 1000);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_LE(std::fabs(double(x[i]) - y[i]), float_rounding_bound(t, x[i])) << t.name << " x=" << x[i];
  }
  EXPECT_EQ(n_float_types, 3);
}

TEST_P(AllTypes, ZeroRowDecodesToZero) {
  const type_traits& t = *GetParam();
  const int64_t n = 2 * t.block_elems;
  const std::vector<float> x(size_t(n), 0.0f);
  const auto y = dequantize(t, quantize(t, x), n);
  for (float v : y) ASSERT_EQ(v, 0.0f);
}

TEST_P(AllTypes, OutlierBlockStaysFinite) {
  // One large value among small ones: the scale search must not blow up the small ones.
  const type_traits& t = *GetParam();
  const int64_t n = t.block_elems * (t.block_elems == 1 ? 64 : 2);
  auto x = cosine_data(1.5f, n, 0.01f);
  x[3] = 50.0f;
  const auto y = dequantize(t, quantize(t, x), n);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(std::isfinite(y[i])) << i;
  EXPECT_NEAR(y[3], 50.0f, 50.0f * 0.1f);
}

// ggml's measure for dot products: |vec_dot(q(w), q_dot(a)) - w.a| / n with n = 4096, w = cos(i),
// a = cos(i + 1).
TEST_P(AllTypes, DotProductErrorAsInLlamaCpp) {
  const type_traits& t = *GetParam();
  const type_traits& partner = type_info(t.dot_type);
  const int64_t n = 4096;
  const auto w = cosine_data(0.0f, n);
  const auto a = cosine_data(1.0f, n);
  double exact = 0;
  for (int64_t i = 0; i < n; ++i) exact += double(w[size_t(i)]) * a[size_t(i)];
  const float got = t.vec_dot(quantize(t, w).data(), quantize(partner, a).data(), n);
  EXPECT_LT(std::fabs(got - exact) / double(n), max_dot_error(t)) << "got " << got << " exact " << exact;
}

// Other lengths, normalized to n = 4096 as for the round trip (errors add like a random walk).
TEST_P(AllTypes, DotProductErrorAtManyLengths) {
  const type_traits& t = *GetParam();
  const type_traits& partner = type_info(t.dot_type);
  for (int64_t n : row_lengths(t)) {
    for (float offset : {0.0f, 2.0f, 5.5f}) {
      const auto w = cosine_data(offset, n);
      const auto a = cosine_data(offset + 1.0f, n, 1.5f);
      double exact = 0;
      for (int64_t i = 0; i < n; ++i) exact += double(w[size_t(i)]) * a[size_t(i)];
      const float got = t.vec_dot(quantize(t, w).data(), quantize(partner, a).data(), n);
      EXPECT_LT(std::fabs(got - exact) / std::sqrt(4096.0 * double(n)), max_dot_error(t))
          << "n=" << n << " offset=" << offset;
    }
  }
}

// vec_dot must compute exactly the dot product of the two decoded rows; only float rounding may
// differ. The one exception is Q8_1's block sum s, which is stored in fp16: the min term of
// Q4_1/Q5_1 may be off by |m * s| * 2^-11 per block.
TEST_P(AllTypes, DotProductEqualsDotOfDecodedRows) {
  const type_traits& t = *GetParam();
  const type_traits& partner = type_info(t.dot_type);
  for (int64_t n : row_lengths(t)) {
    const auto w = cosine_data(0.7f, n);
    const auto a = cosine_data(4.0f, n, 1.5f);
    const auto qw = quantize(t, w);
    const auto qa = quantize(partner, a);
    const auto dw = dequantize(t, qw, n);
    const auto da = dequantize(partner, qa, n);
    double decoded = 0, magnitude = 0;
    for (size_t i = 0; i < size_t(n); ++i) {
      decoded += double(dw[i]) * da[i];
      magnitude += std::fabs(double(dw[i]) * da[i]);
    }
    double tolerance = 1e-5 * magnitude + 1e-6;
    if (partner.type == dtype::q8_1) {
      // |m| <= max|w| and |s| <= sum over the block of |a|, so bound the fp16 error of s by those.
      double min_term = 0;
      for (size_t b = 0; b < size_t(n) / 32; ++b) {
        double max_w = 0, sum_a = 0;
        for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
          max_w = std::max(max_w, std::fabs(double(w[i])));
          sum_a += std::fabs(double(a[i]));
        }
        min_term += max_w * sum_a;
      }
      tolerance += min_term * std::ldexp(1.0, -10);
    }
    const float got = t.vec_dot(qw.data(), qa.data(), n);
    EXPECT_NEAR(got, decoded, tolerance) << "n=" << n;
  }
}

// test-quantize-fns checks the F32 dot on many small odd lengths against 1e-4 per element.
TEST(FloatDot, F32MatchesDoubleDot) {
  const type_traits& t = type_info(dtype::f32);
  for (int n : {1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 67, 127, 129, 193, 255, 1023}) {
    const auto a = cosine_data(0.0f, n);
    const auto b = cosine_data(1.0f, n);
    double exact = 0;
    for (int i = 0; i < n; ++i) exact += double(a[size_t(i)]) * b[size_t(i)];
    EXPECT_LT(std::fabs(t.vec_dot(a.data(), b.data(), n) - exact) / n, 1e-4) << n;
  }
}

}  // namespace
}  // namespace glia
