// Sampling defaults read from GGUF metadata keys (general.sampling.*), through a lookup callback.
#include "sampler_test_util.h"

namespace glia::test {
namespace {

metadata_lookup from(std::map<std::string, double> kv) {
  return [kv = std::move(kv)](std::string_view key) -> std::optional<double> {
    auto it = kv.find(std::string(key));
    if (it == kv.end()) return std::nullopt;
    return it->second;
  };
}

TEST(gguf_sampling_defaults, fills_the_listed_keys) {
  sampler_params p;
  const auto s = apply_gguf_sampling_defaults(p, from({{"general.sampling.temp", 0.6},
                                                       {"general.sampling.top_k", 20},
                                                       {"general.sampling.top_p", 0.9},
                                                       {"general.sampling.min_p", 0.1},
                                                       {"general.sampling.xtc_probability", 0.3},
                                                       {"general.sampling.xtc_threshold", 0.2},
                                                       {"general.sampling.penalty_last_n", 128},
                                                       {"general.sampling.penalty_repeat", 1.1}}));
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_FLOAT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 20);
  EXPECT_FLOAT_EQ(p.top_p, 0.9f);
  EXPECT_FLOAT_EQ(p.min_p, 0.1f);
  EXPECT_FLOAT_EQ(p.xtc_probability, 0.3f);
  EXPECT_FLOAT_EQ(p.xtc_threshold, 0.2f);
  EXPECT_EQ(p.repeat_last_n, 128);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.1f);
  EXPECT_FLOAT_EQ(p.typical_p, 1.0f);  // not a GGUF key
}

TEST(gguf_sampling_defaults, ignores_mirostat_sequence_and_absent_keys) {
  sampler_params p;
  ASSERT_TRUE(apply_gguf_sampling_defaults(p, from({{"general.sampling.mirostat", 2},
                                                    {"general.sampling.mirostat_tau", 5},
                                                    {"general.sampling.mirostat_eta", 0.1},
                                                    {"general.sampling.sequence", 1}}))
                  .is_ok());
  EXPECT_EQ(p, sampler_params{});
  ASSERT_TRUE(apply_gguf_sampling_defaults(p, nullptr).is_ok());
  EXPECT_EQ(p, sampler_params{});
}

TEST(gguf_sampling_defaults, reports_bad_values_and_applies_the_rest) {
  sampler_params p;
  const auto s = apply_gguf_sampling_defaults(p, from({{"general.sampling.top_p", 2.0},
                                                       {"general.sampling.top_k", 3.5},
                                                       {"general.sampling.penalty_repeat", 0.0},
                                                       {"general.sampling.temp", 0.3}}));
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("general.sampling.top_p"), std::string::npos);
  EXPECT_NE(s.message().find("general.sampling.top_k"), std::string::npos);
  EXPECT_NE(s.message().find("general.sampling.penalty_repeat"), std::string::npos);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.repeat_penalty, 1.0f);
  EXPECT_FLOAT_EQ(p.temperature, 0.3f);
}

}  // namespace
}  // namespace glia::test
