// Activation quantizers: the reference Q8_0/Q8_1/Q8_K formulas of ggml (quantize_row_q8_*_ref) and
// the x86 SIMD variants of Q8_0/Q8_1 (ggml-cpu/arch/x86/quants.c), on inputs where the two
// formulas are known to differ. Expected codes are worked out by hand from those formulas.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "quant/activation.h"
#include "quant/block_types.h"
#include "quant/types.h"

namespace glia {
namespace {

using quant::block_q8_0;
using quant::block_q8_1;
using quant::block_q8_k;

// A block whose largest magnitude is 127 gives d = 1 and inverse scale 1 in both variants, so each
// code is the rounding of x itself: ties show the rounding rule.
std::vector<float> tie_block() {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;    // roundf: 3, nearest even: 2
  x[2] = -2.5f;   // roundf: -3, nearest even: -2
  x[3] = 3.5f;    // both 4
  x[4] = 0.5f;    // roundf: 1, nearest even: 0
  x[5] = -7.49f;  // both -7
  x[6] = 100.0f;
  return x;
}

TEST(ActivationQuant, ReferenceQ8_0RoundsHalfAwayFromZero) {
  const auto x = tie_block();
  block_q8_0 b;
  type_info(dtype::q8_0).quantize_row(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_f32(b.d), 1.0f);
  const int expected[7] = {127, 3, -3, 4, 1, -7, 100};
  for (int j = 0; j < 7; ++j) EXPECT_EQ(b.qs[j], expected[j]) << j;
  for (int j = 7; j < 32; ++j) EXPECT_EQ(b.qs[j], 0) << j;
}

TEST(ActivationQuant, X86Q8_0RoundsHalfToEven) {
  const auto x = tie_block();
  block_q8_0 b;
  quant::quantize_row_q8_0_x86(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_f32(b.d), 1.0f);
  const int expected[7] = {127, 2, -2, 4, 0, -7, 100};
  for (int j = 0; j < 7; ++j) EXPECT_EQ(b.qs[j], expected[j]) << j;
}

TEST(ActivationQuant, Q8_1StoresScaleTimesCodeSum) {
  const auto x = tie_block();
  block_q8_1 ref, x86;
  type_info(dtype::q8_1).quantize_row(x.data(), &ref, 32);
  quant::quantize_row_q8_1_x86(x.data(), &x86, 32);
  // Code sums 127+3-3+4+1-7+100 = 225 and 127+2-2+4+0-7+100 = 224, d = 1.
  EXPECT_EQ(fp16_to_f32(ref.s), 225.0f);
  EXPECT_EQ(fp16_to_f32(x86.s), 224.0f);
  EXPECT_EQ(ref.qs[1], 3);
  EXPECT_EQ(x86.qs[1], 2);
}

TEST(ActivationQuant, Q8_1SumUsesTheUnroundedScale) {
  // amax = 0.5 gives d = 0.5/127, not representable in fp16: s must be fp16(sum * d) with the float
  // d, while the stored d is the fp16 rounding of it.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = j == 0 ? -0.5f : (j % 2 ? 0.5f : -0.2f);
  block_q8_1 b;
  type_info(dtype::q8_1).quantize_row(x.data(), &b, 32);
  const float d = 0.5f / 127;
  // Codes: x[0] -> -127, odd j -> 127, even j > 0 -> round(-0.2 * 254) = round(-50.8) = -51.
  const int sum = -127 + 16 * 127 + 15 * -51;
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 127);
  EXPECT_EQ(b.qs[2], -51);
  EXPECT_EQ(b.d, f32_to_fp16(d));
  EXPECT_EQ(b.s, f32_to_fp16(float(sum) * d));
}

TEST(ActivationQuant, Q8_KMapsTheSignedPeakTo127AndSumsGroups) {
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e) x[e] = float(e % 16) - 3.0f;  // peak |x| = 12 at e%16 == 15
  x[200] = -25.4f;                                             // the signed peak
  block_q8_k b;
  type_info(dtype::q8_k).quantize_row(x.data(), &b, 256);
  // iscale = -127 / -25.4 = 5; d = 1 / iscale = 0.2.
  EXPECT_FLOAT_EQ(b.d, 0.2f);
  EXPECT_EQ(b.qs[200], -127);
  for (int e = 0; e < 256; ++e) {
    if (e == 200) continue;
    ASSERT_EQ(b.qs[e], (e % 16 - 3) * 5) << e;
  }
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int e = 16 * g; e < 16 * g + 16; ++e) sum += (e == 200 ? -127 : (e % 16 - 3) * 5);
    EXPECT_EQ(b.bsums[g], sum) << g;
  }
}

TEST(ActivationQuant, Q8_KOfZerosIsZero) {
  std::vector<float> x(256, 0.0f);
  block_q8_k b;
  std::memset(&b, 0x5A, sizeof b);
  type_info(dtype::q8_k).quantize_row(x.data(), &b, 256);
  EXPECT_EQ(b.d, 0.0f);
  for (int e = 0; e < 256; ++e) ASSERT_EQ(b.qs[e], 0);
  for (int g = 0; g < 16; ++g) ASSERT_EQ(b.bsums[g], 0);
}

TEST(ActivationQuant, ActivationQuantizerPicksTheX86VariantOnlyForQ8_0AndQ8_1) {
  EXPECT_EQ(quant::activation_quantizer(dtype::q8_0), &quant::quantize_row_q8_0_x86);
  EXPECT_EQ(quant::activation_quantizer(dtype::q8_1), &quant::quantize_row_q8_1_x86);
  for (dtype t : {dtype::q8_k, dtype::f16, dtype::bf16, dtype::f32})
    EXPECT_EQ(quant::activation_quantizer(t), type_info(t).quantize_row);
}

}  // namespace
}  // namespace glia
