// The op-by-op harness: every case of the table on the CPU backend (1, 2 and 3 threads) against the
// scalar reference backend.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backend/backend.h"
#include "harness.h"
#include "op_cases.h"

namespace glia::test {
namespace {

backend& ref_backend() {
  static const auto b = make_ref_backend();
  return *b;
}

backend& cpu_backend(int n_threads) {
  static std::map<int, std::unique_ptr<backend>> by_threads;
  auto& b = by_threads[n_threads];
  if (!b) b = make_cpu_backend(n_threads);
  return *b;
}

struct op_param {
  size_t case_index;
  int n_threads;
};

class op_vs_ref : public ::testing::TestWithParam<op_param> {};

TEST_P(op_vs_ref, matches_reference) {
  const op_case& c = all_op_cases()[GetParam().case_index];
  const std::vector<float> want = c.run(ref_backend());
  const std::vector<float> got = c.run(cpu_backend(GetParam().n_threads));
  ASSERT_EQ(got.size(), want.size());
  const double err = nmse(got, want);
  if (c.tol == 0.0) {
    EXPECT_TRUE(bit_equal(got.data(), want.data(), got.size())) << c.name << ": nmse " << err;
  } else {
    EXPECT_LE(err, c.tol) << c.name;
  }
}

std::vector<op_param> all_params() {
  std::vector<op_param> out;
  for (size_t i = 0; i < all_op_cases().size(); ++i)
    for (int nth : {1, 2, 3}) out.push_back({i, nth});
  return out;
}

INSTANTIATE_TEST_SUITE_P(cpu, op_vs_ref, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<op_param>& info) {
                           return all_op_cases()[info.param.case_index].name + "_thr" +
                                  std::to_string(info.param.n_threads);
                         });

// find_nonfinite on the reference and on the CPU backend (its scan split over threads) against a
// plain loop: the first inf or NaN wherever it falls (block edges of the vectorized scan, thread
// ranges), with later ones after it, and none.
TEST(find_nonfinite, reports_the_first_nonfinite_value) {
  std::vector<backend*> backends = {&ref_backend()};
  for (int nth : {1, 2, 3}) backends.push_back(&cpu_backend(nth));
  for (int64_t n : {1, 63, 64, 65, 200, 5000, 300001}) {
    for (int64_t bad : {int64_t(-1), int64_t(0), int64_t(63), int64_t(64), n / 3, n / 2 + 1, n - 1}) {
      if (bad >= n) continue;
      auto x = random_floats(size_t(n), uint32_t(n));
      if (bad >= 0) {
        x[size_t(bad)] = bad % 2 ? INFINITY : NAN;
        for (int64_t later = bad + 1; later < n; later += n / 7 + 1) x[size_t(later)] = -INFINITY;
      }
      int64_t want = -1;
      for (int64_t i = 0; i < n && want < 0; ++i)
        if (!std::isfinite(x[size_t(i)])) want = i;
      for (backend* b : backends) {
        nonfinite_record got;
        b->find_nonfinite(x.data(), n, &got);
        ASSERT_EQ(got.index, want) << b->name() << " n " << n << " bad " << bad;
        if (want >= 0) {
          EXPECT_EQ(std::isnan(got.value), std::isnan(x[size_t(want)])) << b->name() << " n " << n;
        }
      }
    }
  }
}

// The table is only as good as its coverage: every weight type must have matmul and get_rows rows.
TEST(op_table, covers_every_weight_type) {
  for (dtype t : weight_types()) {
    const std::string label = type_label(t);
    bool matmul = false, get_rows = false;
    for (const op_case& c : all_op_cases()) {
      matmul |= c.name.rfind("matmul_" + label + "_", 0) == 0;
      get_rows |= c.name.rfind("get_rows_" + label + "_", 0) == 0;
    }
    EXPECT_TRUE(matmul) << label;
    EXPECT_TRUE(get_rows) << label;
  }
  // The types llama-family files use must be among them.
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::q4_0, dtype::q8_0, dtype::q4_k, dtype::q6_k}) {
    const auto types = weight_types();
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << type_label(t);
  }
}

}  // namespace
}  // namespace glia::test
