// "Round to nearest": once a block's scales are chosen, every element must decode to the grid value
// nearest to it. The grid of each block is read from the stored scales with the layouts of
// ggml-common.h; the only slack is for the quantizer computing codes with the float scale while
// the block stores it rounded to fp16 (relative error <= 2^-11).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "core/fp16.h"
#include "quant/types.h"
#include "quant_test_util.h"

namespace glia {
namespace {

uint16_t get16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// The grid of one element: its candidate values and the slack allowed on top of the best distance.
struct grid {
  std::vector<double> values;
  double slack = 0;
};

// Builds the grid for element e of block `b`.
using grid_fn = std::function<grid(const uint8_t* b, int e)>;

grid affine_grid(double d, double m, int lo, int hi, double slack) {
  grid g;
  for (int q = lo; q <= hi; ++q) g.values.push_back(d * q + m);
  g.slack = slack;
  return g;
}

struct case_def {
  dtype type;
  grid_fn grid_of;
};

std::vector<case_def> cases() {
  return {
      {dtype::q4_0,
       [](const uint8_t* b, int) {
         const double d = fp16_to_f32(get16(b));
         return affine_grid(d, 0, -8, 7, std::fabs(d) * 0x1p-7);
       }},
      {dtype::q5_0,
       [](const uint8_t* b, int) {
         const double d = fp16_to_f32(get16(b));
         return affine_grid(d, 0, -16, 15, std::fabs(d) * 0x1p-6);
       }},
      {dtype::q4_1,
       [](const uint8_t* b, int) {
         const double d = fp16_to_f32(get16(b)), m = fp16_to_f32(get16(b + 2));
         return affine_grid(d, m, 0, 15, std::fabs(d) * 0x1p-6 + std::fabs(m) * 0x1p-10);
       }},
      {dtype::q5_1,
       [](const uint8_t* b, int) {
         const double d = fp16_to_f32(get16(b)), m = fp16_to_f32(get16(b + 2));
         return affine_grid(d, m, 0, 31, std::fabs(d) * 0x1p-5 + std::fabs(m) * 0x1p-10);
       }},
      {dtype::q8_0,
       [](const uint8_t* b, int) {
         const double d = fp16_to_f32(get16(b));
         return affine_grid(d, 0, -127, 127, std::fabs(d) * 127 * 0x1p-10);
       }},
      {dtype::q8_1,
       [](const uint8_t* b, int) {
         const double d = fp16_to_f32(get16(b));
         return affine_grid(d, 0, -127, 127, std::fabs(d) * 127 * 0x1p-10);
       }},
      {dtype::q8_k,
       [](const uint8_t* b, int) {
         float d;
         std::memcpy(&d, b, 4);  // float scale: no fp16 rounding
         return affine_grid(d, 0, -127, 127, std::fabs(d) * 1e-3);
       }},
      {dtype::q6_k,
       [](const uint8_t* b, int e) {
         // int8 scales @192, fp16 d @208; codes are fit to the decoded group scale d * sc.
         const double d = double(fp16_to_f32(get16(b + 208)) * float(int8_t(b[192 + e / 16])));
         return affine_grid(d, 0, -32, 31, std::fabs(d) * 1e-3);
       }},
      {dtype::iq4_nl,
       [](const uint8_t* b, int) {
         const double d = fp16_to_f32(get16(b));
         grid g;
         for (int v : test::k_iq4nl) g.values.push_back(d * v);
         g.slack = std::fabs(d) * 127 * 0x1p-10;
         return g;
       }},
  };
}

TEST(NearestCode, EveryElementDecodesToItsNearestGridValue) {
  for (const case_def& c : cases()) {
    const type_traits& t = type_info(c.type);
    SCOPED_TRACE(t.name);
    const int64_t n = 16 * t.block_elems;
    for (float offset : {0.0f, 1.3f, 9.0f}) {
      const auto x = test::cosine_data(offset, n);
      const auto q = test::quantize(t, x);
      const auto y = test::dequantize(t, q, n);
      for (int64_t i = 0; i < n; ++i) {
        const uint8_t* block = q.data() + size_t(i / t.block_elems) * t.block_bytes;
        const grid g = c.grid_of(block, int(i % t.block_elems));
        if (g.values.front() == g.values.back()) continue;  // zero scale: codes are not refit
        double best = std::numeric_limits<double>::infinity();
        for (double v : g.values) best = std::min(best, std::fabs(x[size_t(i)] - v));
        ASSERT_LE(std::fabs(double(x[size_t(i)]) - y[size_t(i)]), best + g.slack + 1e-7)
            << "element " << i << " x=" << x[size_t(i)] << " decoded " << y[size_t(i)];
      }
    }
  }
}

}  // namespace
}  // namespace glia
