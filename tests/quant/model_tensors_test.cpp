// The reference routines on the real quantized tensors of the test-data pack (made by llama.cpp's
// llama-quantize). Oracles:
//  * brown-q8_0.gguf was quantized from brown-f32.gguf: our Q8_0 quantizer must reproduce it byte
//    for byte.
//  * Files made from one master (README section 1/7) hold the same weights at different
//    precisions, so a tensor decoded from a low-bit file must match the same tensor decoded from a
//    high-precision file up to the low-bit format's rounding noise. A wrong bit layout scrambles
//    values and gives an error of the order of the weights themselves.
//  * Every block of every file decodes to finite values, and decoding, re-quantizing and decoding
//    again stays close (exactly the same bytes for the plain round-to-nearest formats).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "quant/types.h"
#include "quant_test_util.h"
#include "test_support.h"

namespace glia {
namespace {

std::shared_ptr<gguf::file> open_model(const std::string& name) {
  auto f = gguf::file::open(test::testdata("models/" + name));
  EXPECT_TRUE(f.is_ok()) << name << ": " << (f.is_ok() ? "" : f.message());
  return f.is_ok() ? *f : nullptr;
}

// The weight matrices (2-D, of a quantized or half type) of a file, by name.
std::map<std::string, const gguf::tensor_info*> matrices(const gguf::file& f) {
  std::map<std::string, const gguf::tensor_info*> out;
  for (const auto& t : f.tensors())
    if (t.n_dims == 2) out[t.name] = &t;
  return out;
}

const type_traits& traits_of(const gguf::tensor_info& t) {
  const type_traits* tt = find_type(t.type);
  EXPECT_NE(tt, nullptr) << t.name << " has type " << type_name(t.type);
  return tt ? *tt : type_info(dtype::f32);
}

int64_t n_rows(const gguf::tensor_info& t) { return t.n_elements() / t.ne[0]; }

const uint8_t* row_ptr(const gguf::tensor_info& t, int64_t r) {
  return t.data + size_t(r) * row_bytes(traits_of(t), t.ne[0]);
}

std::vector<float> decode_row(const gguf::tensor_info& t, int64_t r) {
  return test::dequantize(traits_of(t), row_ptr(t, r), t.ne[0]);
}

// Rows to sample from a tensor: all of them for small ones, an even spread (ends included) for the
// large embeddings.
std::vector<int64_t> sample_rows(const gguf::tensor_info& t, int64_t max_rows = 256) {
  const int64_t rows = n_rows(t);
  std::vector<int64_t> out;
  if (rows <= max_rows) {
    for (int64_t r = 0; r < rows; ++r) out.push_back(r);
  } else {
    for (int64_t i = 0; i < max_rows; ++i) out.push_back(i * (rows - 1) / (max_rows - 1));
  }
  return out;
}

const char* const k_quantized_models[] = {
    "llama-tied-Q8_0.gguf",     "llama-tied-Q4_0.gguf",     "llama-tied-IQ4_NL.gguf",   "llama-h160-Q4_1.gguf",
    "llama-h160-Q5_0.gguf",     "llama-h160-Q5_1.gguf",     "llama-h160-BF16.gguf",     "llama-h256-Q2_K.gguf",
    "llama-h256-Q4_K_M.gguf",   "llama-hd128-Q3_K_M.gguf",  "llama-hd128-Q5_K_M.gguf",  "llama-hd128-Q6_K.gguf",
    "llama-hd128-IQ4_XS.gguf",  "brown-q8_0.gguf",
};

TEST(ModelTensors, EveryBlockOfEveryFileDecodesToFiniteValues) {
  for (const char* name : k_quantized_models) {
    auto f = open_model(name);
    ASSERT_NE(f, nullptr);
    for (const auto& t : f->tensors()) {
      const type_traits* tt = find_type(t.type);
      ASSERT_NE(tt, nullptr) << name << " " << t.name;
      ASSERT_EQ(t.n_bytes, size_t(t.n_elements() / tt->block_elems) * tt->block_bytes) << name << " " << t.name;
      const int64_t rows = n_rows(t);
      double sum_sq = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const auto x = decode_row(t, r);
        for (float v : x) {
          ASSERT_TRUE(std::isfinite(v)) << name << " " << t.name << " row " << r;
          sum_sq += double(v) * v;
        }
      }
      // Random weights (README: N(0, 0.08^2) .. N(0, 0.15^2), norms ~1; brown: trained): a decoded
      // rms far outside that range means the scales are read wrongly.
      const double rms = std::sqrt(sum_sq / double(t.n_elements()));
      EXPECT_GT(rms, 0.01) << name << " " << t.name;
      EXPECT_LT(rms, 3.0) << name << " " << t.name;
    }
  }
}

TEST(ModelTensors, BrownQ8_0IsOurQ8_0OfBrownF32) {
  auto f32 = open_model("brown-f32.gguf");
  auto q8 = open_model("brown-q8_0.gguf");
  ASSERT_TRUE(f32 && q8);
  const type_traits& q8_0 = type_info(dtype::q8_0);
  int n_compared = 0;
  for (const auto& t : q8->tensors()) {
    if (t.type != uint32_t(dtype::q8_0)) continue;
    const gguf::tensor_info* src = f32->find_tensor(t.name);
    ASSERT_NE(src, nullptr) << t.name;
    ASSERT_EQ(src->type, uint32_t(dtype::f32));
    ASSERT_EQ(src->n_elements(), t.n_elements());
    std::vector<uint8_t> ours(t.n_bytes);
    q8_0.quantize_row(reinterpret_cast<const float*>(src->data), ours.data(), src->n_elements());
    EXPECT_EQ(0, std::memcmp(ours.data(), t.data, t.n_bytes)) << t.name;
    ++n_compared;
  }
  EXPECT_EQ(n_compared, 43);  // README section 6: 43 matrices in Q8_0
}

// Decode, re-quantize with our quantizer, decode again. The round-to-nearest formats land on the
// same codes (the decoded values sit exactly on their grid), so the bytes must come back; the
// searched formats must stay within a fraction of their own rounding step.
TEST(ModelTensors, RequantizingDecodedRowsIsStable) {
  // Relative rms change allowed: a quarter of the rounding noise of a b-bit grid over a block's
  // range (about 1.7 / 2^b of the rms, see CrossFileAgreement).
  auto bound = [](const type_traits& t) {
    switch (t.type) {
      case dtype::q2_k: return 0.25 * 1.7 / 4;
      case dtype::q3_k: return 0.25 * 1.7 / 8;
      case dtype::q4_k: case dtype::iq4_xs: case dtype::iq4_nl: return 0.25 * 1.7 / 16;
      case dtype::q5_k: return 0.25 * 1.7 / 32;
      default: return 0.25 * 1.7 / 64;
    }
  };
  for (const char* name : k_quantized_models) {
    auto f = open_model(name);
    ASSERT_NE(f, nullptr);
    for (const auto& [tname, t] : matrices(*f)) {
      const type_traits& tt = traits_of(*t);
      if (!tt.is_quantized) continue;
      const bool exact = tt.type == dtype::q8_0 || tt.type == dtype::q4_0 || tt.type == dtype::q4_1 ||
                         tt.type == dtype::q5_0 || tt.type == dtype::q5_1;
      double diff_sq = 0, ref_sq = 0;
      int64_t changed_rows = 0;
      for (int64_t r : sample_rows(*t)) {
        const auto x = decode_row(*t, r);
        const auto q = test::quantize(tt, x);
        if (std::memcmp(q.data(), row_ptr(*t, r), q.size()) != 0) ++changed_rows;
        const auto y = test::dequantize(tt, q, t->ne[0]);
        diff_sq += test::sum_sq_diff(x, y);
        for (float v : x) ref_sq += double(v) * v;
      }
      if (exact) {
        EXPECT_EQ(changed_rows, 0) << name << " " << tname;
      }
      EXPECT_LE(std::sqrt(diff_sq / ref_sq), bound(tt)) << name << " " << tname << " (" << tt.name << ")";
    }
  }
}

// Files made from the same master, and the most precise file of each family.
struct family {
  const char* reference;  // the highest-precision file
  std::vector<const char*> others;
};

TEST(ModelTensors, CrossFileAgreement) {
  // Uniform rounding of a block with range ~[-2.2σ, 2.2σ] on a b-bit grid leaves rms noise
  // step/sqrt(12) ≈ 1.3σ / 2^b; the bound allows 1.5x that plus the reference file's own noise.
  auto noise = [](const type_traits& t) {
    switch (t.type) {
      case dtype::bf16: return 1.0 / 256;
      case dtype::q8_0: return 1.3 / 256;
      case dtype::q6_k: return 1.3 / 64;
      case dtype::q5_0: case dtype::q5_1: case dtype::q5_k: return 1.3 / 32;
      case dtype::q4_0: case dtype::q4_1: case dtype::q4_k: case dtype::iq4_nl: case dtype::iq4_xs: return 1.3 / 16;
      case dtype::q3_k: return 1.3 / 8;
      case dtype::q2_k: return 1.3 / 4;
      default: return 0.0;
    }
  };
  const family families[] = {
      {"llama-tied-Q8_0.gguf", {"llama-tied-Q4_0.gguf", "llama-tied-IQ4_NL.gguf"}},
      {"llama-h160-BF16.gguf", {"llama-h160-Q4_1.gguf", "llama-h160-Q5_0.gguf", "llama-h160-Q5_1.gguf"}},
      {"llama-hd128-Q6_K.gguf", {"llama-hd128-Q3_K_M.gguf", "llama-hd128-Q5_K_M.gguf", "llama-hd128-IQ4_XS.gguf"}},
      {"llama-h256-Q4_K_M.gguf", {"llama-h256-Q2_K.gguf"}},
  };
  for (const family& fam : families) {
    auto ref = open_model(fam.reference);
    ASSERT_NE(ref, nullptr);
    const auto ref_mats = matrices(*ref);
    for (const char* other_name : fam.others) {
      auto other = open_model(other_name);
      ASSERT_NE(other, nullptr);
      int n_compared = 0;
      for (const auto& [tname, t] : matrices(*other)) {
        auto it = ref_mats.find(tname);
        ASSERT_NE(it, ref_mats.end()) << tname;
        const gguf::tensor_info& r = *it->second;
        ASSERT_EQ(r.n_elements(), t->n_elements()) << tname;
        double diff_sq = 0, ref_sq = 0;
        for (int64_t row : sample_rows(*t)) {
          const auto x = decode_row(r, row);
          const auto y = decode_row(*t, row);
          diff_sq += test::sum_sq_diff(x, y);
          for (float v : x) ref_sq += double(v) * v;
        }
        const double rel = std::sqrt(diff_sq / ref_sq);
        const double bound = 1.5 * noise(traits_of(*t)) + noise(traits_of(r));
        EXPECT_LT(rel, bound) << other_name << " " << tname << " " << traits_of(*t).name << " vs "
                              << traits_of(r).name;
        ++n_compared;
      }
      EXPECT_GE(n_compared, 14) << other_name;
    }
  }
}

}  // namespace
}  // namespace glia
