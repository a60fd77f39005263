// Our logits against llama.cpp's (../shared/testdata/golden), for every model file of the pack, with
// the tolerance table of the pack's README (section 2, "Tolerances").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "golden_pack.h"
#include "test_support.h"

namespace glia {
namespace {

using json = nlohmann::json;
using test::golden_case;
using test::golden_stems;
using test::read_golden;
using test::tolerance_for;

enum class mode { batch, one_by_one, chunked };

struct run_config {
  const char* name;
  const char* backend;
  mode m;
  dtype kv;
};

const run_config kConfigs[] = {
    {"cpu_batch_kv32", "cpu", mode::batch, dtype::f32},
    {"cpu_one_by_one_kv32", "cpu", mode::one_by_one, dtype::f32},
    {"cpu_chunked5_kv32", "cpu", mode::chunked, dtype::f32},
    {"cpu_batch_kv16", "cpu", mode::batch, dtype::f16},
    {"ref_batch_kv32", "ref", mode::batch, dtype::f32},
#if GLIA_TEST_CUDA_BUILD  // a build without the CUDA backend has no device to try, ever
    {"cuda_batch_kv16", "cuda", mode::batch, dtype::f16},
    {"cuda_one_by_one_kv16", "cuda", mode::one_by_one, dtype::f16},  // replays recorded steps
    {"cuda_chunked5_kv32", "cuda", mode::chunked, dtype::f32},
#endif
};

// The backend of a config; null (the test skips) for cuda where no device is present.
std::unique_ptr<backend> backend_for(const run_config& cfg) {
  const std::string name = cfg.backend;
  if (name == "cuda") return cuda_device_count() > 0 ? make_cuda_backend() : nullptr;
  return name == "cpu" ? make_cpu_backend(2) : make_ref_backend();
}

class golden_logits : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(golden_logits, match_llama_cpp) {
  const auto& [stem, config_index] = GetParam();
  const run_config& cfg = kConfigs[config_index];
  auto be = backend_for(cfg);
  if (!be) GTEST_SKIP() << "skipped: no CUDA device";
  golden_case g = read_golden(stem);
  auto m = load_model(test::testdata(g.manifest["model"].get<std::string>()));
  ASSERT_TRUE(m.is_ok()) << m.message();
  float worst = 0.0f;
  test::expect_golden_logits(**m, g, tolerance_for(stem), *be, cfg.m == mode::chunked ? 5 : 512, cfg.kv,
                             cfg.m == mode::one_by_one, worst);
  RecordProperty("max_abs", std::to_string(worst));
  std::printf("[ %s / %s ] max abs deviation %.6f (bound %.2f)\n", stem.c_str(), cfg.name, worst, tolerance_for(stem).max_abs);
}

INSTANTIATE_TEST_SUITE_P(pack, golden_logits,
                         ::testing::Combine(::testing::ValuesIn(golden_stems()),
                                            ::testing::Range(0, int(std::size(kConfigs)))),
                         [](const auto& info) {
                           return test::param_name(std::get<0>(info.param) + "_" + kConfigs[std::get<1>(info.param)].name);
                         });

// Greedy continuations recorded by llama.cpp: the generated ids must be identical.
class golden_greedy : public ::testing::TestWithParam<std::string> {};

TEST_P(golden_greedy, continuation_ids_match) {
  golden_case g = read_golden(GetParam());
  ASSERT_TRUE(g.manifest.contains("greedy_continuations"));
  auto m = load_model(test::testdata(g.manifest["model"].get<std::string>()));
  ASSERT_TRUE(m.is_ok()) << m.message();
  auto be = make_cpu_backend(2);
  auto cache = kv_cache::create((*m)->profile, 512, 512, dtype::f32, *be);
  ASSERT_TRUE(cache.is_ok());
  forward_pass fwd(**m, *be);
  for (const auto& item : g.manifest["greedy_continuations"]["items"]) {
    const auto prompt = item["prompt_ids"].get<std::vector<int32_t>>();
    const auto want = item["continuation_ids"].get<std::vector<int32_t>>();
    cache->clear();
    std::vector<float> logits;
    ASSERT_TRUE(fwd.run(*cache, prompt, 0, false, logits).is_ok());
    std::vector<int32_t> got;
    int32_t pos = int32_t(prompt.size());
    while (got.size() < want.size()) {
      const int32_t id = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
      got.push_back(id);
      ASSERT_TRUE(fwd.run(*cache, std::span<const int32_t>(&id, 1), pos++, false, logits).is_ok());
    }
    EXPECT_EQ(got, want) << item["prompt_text"];
  }
}

INSTANTIATE_TEST_SUITE_P(pack, golden_greedy, ::testing::Values("stories260K", "brown-f32", "brown-q8_0"),
                         [](const auto& info) { return test::param_name(info.param); });

}  // namespace
}  // namespace glia
