// The AVX2 scale searches (8 groups in the lanes of a vector) against the scalar searches they
// stand in for: the codes, scale and minimum of every group must be the same bits, on random groups
// and on the groups that take the searches' special paths (flat, all positive, all negative, zeros,
// one outlier, tiny and huge magnitudes, ties).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "quant/k_quant_search.h"
#include "quant/types.h"

namespace glia {
namespace {

// The searches' parameters as Q4_K, Q5_K and Q2_K call them.
struct search_case {
  const char* name;
  int n, nmax;
  float rmin, rdelta;
  int nstep;
  bool use_mad;
};
constexpr search_case k_cases[] = {
    {"Q4_K", 32, 15, -1.0f, 0.1f, 20, false},
    {"Q5_K", 32, 31, -0.5f, 0.1f, 15, false},
    {"Q2_K", 16, 3, -0.5f, 0.1f, 15, true},
    {"one step", 16, 7, -1.0f, 0.1f, 0, false},
};

// Groups of n elements, 8 of them, in one of several shapes chosen by `kind`.
std::vector<float> make_groups(int n, int kind, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(size_t(8 * n));
  for (int g = 0; g < 8; ++g) {
    float* xg = x.data() + g * n;
    const int shape = (kind + g) % 11;
    for (int i = 0; i < n; ++i) {
      const float r = normal(rng);
      switch (shape) {
        case 0: xg[i] = r; break;                                  // centred
        case 1: xg[i] = std::fabs(r) + 0.25f; break;               // all positive
        case 2: xg[i] = -std::fabs(r) - 0.25f; break;              // all negative
        case 3: xg[i] = 0.75f; break;                              // constant (lo clamps to 0)
        case 9: xg[i] = -0.75f; break;                             // flat: hi == lo < 0
        case 10: xg[i] = i % 3 == 0 ? 0.5f * r : (i % 2 ? -0.0f : 0.0f); break;  // signed zeros
        case 4: xg[i] = 0.0f; break;                               // zeros
        case 5: xg[i] = i == n / 2 ? 40.0f * r : 0.01f * r; break;  // one outlier
        case 6: xg[i] = 1e-20f * r; break;                          // tiny
        case 7: xg[i] = 3e4f * r; break;                            // huge
        default: xg[i] = float(int(4.0f * r)) * 0.125f; break;     // few distinct values, ties
      }
    }
  }
  return x;
}

std::vector<float> weights_of(const std::vector<float>& x, int n, bool rms_plus_abs) {
  std::vector<float> w(x.size());
  for (size_t g = 0; g < x.size() / size_t(n); ++g) {
    float sum_x2 = 0;
    for (int i = 0; i < n; ++i) sum_x2 += x[g * n + i] * x[g * n + i];
    const float av_x = std::sqrt(sum_x2 / float(n));
    for (int i = 0; i < n; ++i) w[g * n + i] = (rms_plus_abs ? av_x : 0.0f) + std::fabs(x[g * n + i]);
  }
  return w;
}

#if defined(__x86_64__)  // the AVX2 searches are built on x86-64 only
TEST(k_quant_search, avx2_groups_match_the_scalar_search_bit_for_bit) {
  if (!has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(7);
  int groups = 0;
  for (const search_case& c : k_cases) {
    for (int round = 0; round < 300; ++round) {
      const std::vector<float> x = make_groups(c.n, round, rng);
      const std::vector<float> w = weights_of(x, c.n, !c.use_mad);
      std::vector<uint8_t> L_vec(x.size()), L_ref(x.size());
      float min_vec[8], scale_vec[8];
      quant::fit_affine_x8(c.n, c.nmax, x.data(), w.data(), L_vec.data(), min_vec, scale_vec, c.rmin, c.rdelta, c.nstep,
                           c.use_mad);
      for (int g = 0; g < 8; ++g, ++groups) {
        float min_ref;
        const float scale_ref = quant::fit_affine(c.n, c.nmax, x.data() + g * c.n, w.data() + g * c.n, L_ref.data() + g * c.n,
                                                  &min_ref, c.rmin, c.rdelta, c.nstep, c.use_mad);
        ASSERT_EQ(std::bit_cast<uint32_t>(scale_vec[g]), std::bit_cast<uint32_t>(scale_ref))
            << c.name << " round " << round << " group " << g << ": " << scale_vec[g] << " vs " << scale_ref;
        ASSERT_EQ(std::bit_cast<uint32_t>(min_vec[g]), std::bit_cast<uint32_t>(min_ref))
            << c.name << " round " << round << " group " << g << ": " << min_vec[g] << " vs " << min_ref;
        for (int i = 0; i < c.n; ++i)
          ASSERT_EQ(L_vec[g * c.n + i], L_ref[g * c.n + i]) << c.name << " round " << round << " group " << g << " element " << i;
      }
    }
  }
  EXPECT_EQ(groups, 4 * 300 * 8);
}

// The symmetric searches (Q6_K: 16 elements, codes -32..31, a scale sweep; Q3_K: codes -4..3,
// coordinate descent) likewise.
using symmetric_x8 = void (*)(int, int, const float*, int8_t*, float*);
using symmetric_1 = float (*)(int, int, const float*, int8_t*);
struct symmetric_case {
  const char* name;
  symmetric_x8 vec;
  symmetric_1 ref;
};

TEST(k_quant_search, avx2_symmetric_groups_match_the_scalar_search_bit_for_bit) {
  if (!has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(9);
  const symmetric_case searches[] = {{"weighted", quant::fit_symmetric_weighted_x8, quant::fit_symmetric_weighted},
                                     {"refined", quant::fit_symmetric_refined_x8, quant::fit_symmetric_refined}};
  for (const symmetric_case& c : searches)
  for (int nmax : {32, 4}) {
    for (int round = 0; round < 600; ++round) {
      const std::vector<float> x = make_groups(16, round, rng);
      std::vector<int8_t> L_vec(x.size()), L_ref(x.size());
      float scale_vec[8];
      c.vec(16, nmax, x.data(), L_vec.data(), scale_vec);
      for (int g = 0; g < 8; ++g) {
        const float scale_ref = c.ref(16, nmax, x.data() + g * 16, L_ref.data() + g * 16);
        ASSERT_EQ(std::bit_cast<uint32_t>(scale_vec[g]), std::bit_cast<uint32_t>(scale_ref))
            << c.name << " nmax " << nmax << " round " << round << " group " << g << ": " << scale_vec[g] << " vs " << scale_ref;
        for (int i = 0; i < 16; ++i)
          ASSERT_EQ(L_vec[g * 16 + i], L_ref[g * 16 + i]) << c.name << " nmax " << nmax << " round " << round << " group " << g << " element " << i;
      }
    }
  }
}

// IQ4_NL's and IQ4_XS's scale search (groups of 32, levels of the non-uniform table).
TEST(k_quant_search, avx2_iq4_groups_match_the_scalar_search_bit_for_bit) {
  if (!has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(13);
  for (int round = 0; round < 600; ++round) {
    const std::vector<float> x = make_groups(32, round, rng);
    float scale_vec[8];
    quant::fit_iq4_x8(x.data(), scale_vec);
    for (int g = 0; g < 8; ++g) {
      const float scale_ref = quant::fit_iq4_group(x.data() + g * 32);
      ASSERT_EQ(std::bit_cast<uint32_t>(scale_vec[g]), std::bit_cast<uint32_t>(scale_ref))
          << "round " << round << " group " << g << ": " << scale_vec[g] << " vs " << scale_ref;
    }
  }
}

#endif  // __x86_64__

// The dispatcher covers any number of groups: full vectors, then the rest one by one.
TEST(k_quant_search, groups_dispatch_matches_one_call_per_group) {
  std::mt19937 rng(11);
  for (int n_groups : {1, 7, 8, 13, 16}) {
    std::vector<float> x;
    for (int k = 0; k < (n_groups + 7) / 8; ++k) {
      const std::vector<float> part = make_groups(32, k, rng);
      x.insert(x.end(), part.begin(), part.end());
    }
    x.resize(size_t(n_groups * 32));
    const std::vector<float> w = weights_of(x, 32, true);
    std::vector<uint8_t> L(x.size()), L_ref(x.size());
    std::vector<float> mins(static_cast<size_t>(n_groups)), scales(static_cast<size_t>(n_groups));
    quant::fit_affine_groups(n_groups, 32, 15, x.data(), w.data(), L.data(), mins.data(), scales.data(), -1.0f, 0.1f, 20, false);
    for (int g = 0; g < n_groups; ++g) {
      float min_ref;
      const float scale_ref =
          quant::fit_affine(32, 15, x.data() + g * 32, w.data() + g * 32, L_ref.data() + g * 32, &min_ref, -1.0f, 0.1f, 20, false);
      EXPECT_EQ(std::bit_cast<uint32_t>(scales[size_t(g)]), std::bit_cast<uint32_t>(scale_ref)) << n_groups << " groups, group " << g;
      EXPECT_EQ(std::bit_cast<uint32_t>(mins[size_t(g)]), std::bit_cast<uint32_t>(min_ref)) << n_groups << " groups, group " << g;
    }
    EXPECT_EQ(L, L_ref) << n_groups << " groups";
    std::vector<int8_t> S(x.size()), S_ref(x.size());
    std::vector<float> sym(static_cast<size_t>(n_groups) * 2);
    quant::fit_symmetric_weighted_groups(n_groups * 2, 16, 32, x.data(), S.data(), sym.data());
    for (int g = 0; g < 2 * n_groups; ++g) {
      const float scale_ref = quant::fit_symmetric_weighted(16, 32, x.data() + g * 16, S_ref.data() + g * 16);
      EXPECT_EQ(std::bit_cast<uint32_t>(sym[size_t(g)]), std::bit_cast<uint32_t>(scale_ref)) << 2 * n_groups << " groups of 16, group " << g;
    }
    EXPECT_EQ(S, S_ref) << 2 * n_groups << " groups of 16";
    quant::fit_symmetric_refined_groups(n_groups * 2, 16, 4, x.data(), S.data(), sym.data());
    for (int g = 0; g < 2 * n_groups; ++g) {
      const float scale_ref = quant::fit_symmetric_refined(16, 4, x.data() + g * 16, S_ref.data() + g * 16);
      EXPECT_EQ(std::bit_cast<uint32_t>(sym[size_t(g)]), std::bit_cast<uint32_t>(scale_ref)) << 2 * n_groups << " refined groups, group " << g;
    }
    EXPECT_EQ(S, S_ref) << 2 * n_groups << " refined groups of 16";
    std::vector<float> iq4(static_cast<size_t>(n_groups));
    quant::fit_iq4_groups(n_groups, x.data(), iq4.data());
    for (int g = 0; g < n_groups; ++g) {
      EXPECT_EQ(std::bit_cast<uint32_t>(iq4[size_t(g)]), std::bit_cast<uint32_t>(quant::fit_iq4_group(x.data() + g * 32)))
          << n_groups << " IQ4 groups, group " << g;
    }
  }
}

// A row of IQ4_NL blocks whose count is not a multiple of 8: its scale searches run 8 blocks at a
// time plus a scalar tail; every block must come out as it does quantized on its own (a block
// alone takes the scalar search).
TEST(k_quant_search, iq4_nl_row_matches_its_blocks_quantized_alone) {
  const type_traits& t = type_info(dtype::iq4_nl);
  std::mt19937 rng(17);
  std::vector<float> x;
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> part = make_groups(32, 3 * k, rng);
    x.insert(x.end(), part.begin(), part.end());
  }
  x.resize(13 * 32);
  std::vector<uint8_t> row(row_bytes(t, int64_t(x.size())));
  t.quantize_row(x.data(), row.data(), int64_t(x.size()));
  for (size_t b = 0; b < 13; ++b) {
    std::vector<uint8_t> alone(t.block_bytes);
    t.quantize_row(x.data() + 32 * b, alone.data(), 32);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), row.begin() + std::ptrdiff_t(b * t.block_bytes))) << "block " << b;
  }
}

}  // namespace
}  // namespace glia
