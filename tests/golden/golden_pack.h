// The test pack's golden logits (../shared/testdata/golden): reading a case and the tolerance table
// of the pack's README (section 2, "Tolerances"). Shared by the golden tests of GGUF files and of
// Hugging Face checkpoints exported from them.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "test_support.h"

namespace glia::test {

using json = nlohmann::json;

struct tolerance {
  float max_abs;
  bool exact_top1;  // else: golden top-1 within our top-5
};

// The README's table: one row per file class.
inline tolerance tolerance_for(const std::string& stem) {
  if (stem == "stories260K" || stem == "brown-f32") return {0.06f, true};
  if (stem == "gemma4-F16") return {0.15f, true};
  if (stem.ends_with("-F16")) return {0.03f, true};
  if (stem.ends_with("-BF16")) return {0.15f, true};
  if (stem.ends_with("Q8_0") || stem.ends_with("q8_0")) return {0.3f, false};
  if (stem.ends_with("Q4_0") || stem.ends_with("Q4_1") || stem.ends_with("Q5_0") || stem.ends_with("Q5_1") ||
      stem.ends_with("IQ4_NL"))
    return {0.45f, false};
  return {0.8f, false};  // k-quants and IQ4_XS
}

inline std::vector<std::string> golden_stems() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(testdata("golden")))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct golden_case {
  json manifest;
  std::vector<float> logits;  // [rows, n_vocab]
  int64_t n_vocab = 0;
};

inline golden_case read_golden(const std::string& stem) {
  golden_case g;
  std::ifstream in(testdata("golden/" + stem + ".json"));
  g.manifest = json::parse(in);
  g.n_vocab = g.manifest["n_vocab"].get<int64_t>();
  auto bytes = read_file(testdata(g.manifest["logits_file"].get<std::string>()));
  g.logits.resize(bytes.size() / sizeof(float));
  std::memcpy(g.logits.data(), bytes.data(), g.logits.size() * sizeof(float));
  return g;
}

// Runs every prompt of `g` through `m` (in batches of n_ubatch, or one token at a time) and checks each
// stored row against the golden one: max |difference| within tol, top-1 equal (or within our top 5).
// `worst` receives the largest difference seen.
inline void expect_golden_logits(const model& m, const golden_case& g, const tolerance& tol, backend& be, int n_ubatch,
                                 dtype kv, bool one_by_one, float& worst) {
  ASSERT_EQ(m.profile.n_vocab, g.n_vocab);
  auto cache = kv_cache::create(m.profile, 512, n_ubatch, kv, be);
  ASSERT_TRUE(cache.is_ok()) << cache.message();
  forward_pass fwd(m, be);
  worst = 0.0f;
  for (const auto& prompt : g.manifest["prompts"]) {
    const auto ids = prompt["ids"].get<std::vector<int32_t>>();
    const auto stored = prompt["stored_positions"].get<std::vector<int>>();
    const int row_offset = prompt["row_offset"].get<int>();
    cache->clear();
    std::vector<float> ours;  // [n_ids, n_vocab]
    if (one_by_one) {
      std::vector<float> row;
      for (size_t i = 0; i < ids.size(); ++i) {
        status s = fwd.run(*cache, std::span<const int32_t>(&ids[i], 1), int32_t(i), false, row);
        ASSERT_TRUE(s.is_ok()) << s.message();
        ours.insert(ours.end(), row.begin(), row.end());
      }
    } else {
      status s = fwd.run(*cache, ids, 0, true, ours);
      ASSERT_TRUE(s.is_ok()) << s.message();
    }
    for (size_t r = 0; r < stored.size(); ++r) {
      const float* want = g.logits.data() + (row_offset + int64_t(r)) * g.n_vocab;
      const float* got = ours.data() + int64_t(stored[r]) * g.n_vocab;
      float max_abs = 0.0f;
      for (int64_t v = 0; v < g.n_vocab; ++v) max_abs = std::max(max_abs, std::fabs(got[v] - want[v]));
      worst = std::max(worst, max_abs);
      EXPECT_LE(max_abs, tol.max_abs) << prompt["name"] << " position " << stored[r];
      const int golden_top = prompt["argmax"][r].get<int>();
      const int our_top = int(std::max_element(got, got + g.n_vocab) - got);
      if (tol.exact_top1) {
        EXPECT_EQ(our_top, golden_top) << prompt["name"] << " position " << stored[r];
      } else {
        int rank = 0;
        for (int64_t v = 0; v < g.n_vocab; ++v)
          if (got[v] > got[golden_top]) ++rank;
        EXPECT_LT(rank, 5) << prompt["name"] << " position " << stored[r] << ": golden top-1 is our rank " << rank;
      }
    }
  }
}

}  // namespace glia::test
