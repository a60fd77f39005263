// --kl-divergence-base files in llama-perplexity's layout, and the KL divergence computed from them:
// against the divergence of the two models' full distributions computed here in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "glia/session.h"
#include "runtime/kl_divergence.h"
#include "runtime/logprob_file.h"
#include "runtime/perplexity.h"
#include "test_support.h"

namespace glia {
namespace {

std::unique_ptr<session> open_model(const std::string& model) {
  session_options o;
  o.model_path = test::testdata("models/" + model);
  o.n_threads = 2;
  o.n_ctx = 64;
  o.kv_type = "f32";
  auto s = session::create(o);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return s.is_ok() ? std::move(*s) : nullptr;
}

std::vector<double> log_softmax(const float* logits, int64_t n) {
  double top = logits[0], sum = 0.0;
  for (int64_t i = 0; i < n; ++i) top = std::max(top, double(logits[i]));
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - top);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = double(logits[i]) - top - std::log(sum);
  return out;
}

// A record keeps every log-probability within 16 nats of the top to half a step (16 / 65535 / 2).
TEST(logprob_file, records_keep_log_probabilities_to_half_a_step) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  for (int n : {1, 2, 7, 1000, 1001}) {
    std::vector<float> logits(static_cast<size_t>(n));
    for (float& l : logits) l = dist(rng);
    std::vector<uint16_t> record(logprob_record_words(n));
    const int32_t token = n / 2;
    const double nll = encode_logprobs(logits, token, record.data());
    const auto exact = log_softmax(logits.data(), n);
    EXPECT_NEAR(nll, -exact[size_t(token)], 1e-5);
    const double top = *std::max_element(exact.begin(), exact.end());
    for (int i = 0; i < n; ++i) {
      if (exact[size_t(i)] <= top - 16.0) continue;
      EXPECT_NEAR(decoded_logprob(record.data(), i), exact[size_t(i)], 16.0 / 65535.0 / 2 + 1e-5) << "n " << n << " i " << i;
    }
  }
}

TEST(logprob_file, malformed_files_are_refused) {
  const std::string path = test::scratch("logprob-ok.kld");
  logprob_header h{4, 3, 1, {0, 1, 2, 1}};
  auto w = logprob_writer::create(path, h);
  ASSERT_TRUE(w.is_ok()) << w.message();
  std::vector<uint16_t> records(logprob_record_words(3), 0);  // one scored position (4 - 1 - 2)
  ASSERT_TRUE(w->write(records).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  auto r = logprob_reader::open(path);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->header().tokens, h.tokens);
  std::vector<uint16_t> back;
  EXPECT_TRUE(r->read_chunk(back).is_ok());
  EXPECT_EQ(back, records);

  const std::string bytes = test::read_text(path);
  auto refused = [&](const std::string& content, const std::string& why) {
    const std::string bad = test::scratch("logprob-bad.kld");
    test::write_text(bad, content);
    auto b = logprob_reader::open(bad);
    ASSERT_FALSE(b.is_ok()) << why;
    EXPECT_NE(b.message().find(why), std::string::npos) << b.message();
  };
  refused("_logits", "not a file of log-probabilities");
  refused("_logits_\x04", "the header ends early");
  refused(bytes.substr(0, bytes.size() - 2), "needs " + std::to_string(bytes.size()));
  refused(bytes + "xx", "needs " + std::to_string(bytes.size()));
  std::string huge = bytes;
  huge[11] = '\x7f';  // n_ctx past 2^24
  refused(huge, "header says n_ctx");
  std::string token = bytes;
  token[20] = 7;  // the first token, past a vocabulary of 3
  refused(token, "token 7 outside its vocabulary of 3");
  // Headers whose sizes would overflow or allocate without bound are refused before any allocation.
  auto header = [&](uint32_t n_ctx, int32_t n_vocab, int32_t n_chunk) {
    std::string h = "_logits_";
    h.append(reinterpret_cast<const char*>(&n_ctx), 4);
    h.append(reinterpret_cast<const char*>(&n_vocab), 4);
    h.append(reinterpret_cast<const char*>(&n_chunk), 4);
    return h;
  };
  refused(header(4, 0, 1), "header says");
  refused(header(4, 3, -1), "header says");
  refused(header(4, (1 << 24) + 1, 1), "header says");
  refused(header(12, 1717986910, 1 << 30), "header says");  // n_ctx * n_chunk past 2^31 (and 2^64 bytes)
  refused(header(1 << 24, 1 << 24, 127), "needs");           // within bounds: the file is just too short
}

// KL divergence of brown-q8_0 from brown-f32 against the divergence of their full distributions,
// and of a model from itself (zero, the same top token nearly everywhere, the text's perplexity).
TEST(kl_divergence, matches_the_divergence_of_full_distributions) {
  auto f32 = open_model("brown-f32.gguf"), q8 = open_model("brown-q8_0.gguf");
  ASSERT_TRUE(f32 && q8);
  const std::string text =
      "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced no "
      "evidence that any irregularities took place. The jury further said in term-end presentments that the City "
      "Executive Committee, which had over-all charge of the election, deserves the praise and thanks of the City of "
      "Atlanta for the manner in which the election was conducted.";
  auto ids = perplexity_tokens(*f32, text);
  ASSERT_TRUE(ids.is_ok());
  perplexity_options po;
  po.n_ctx = 32;
  const std::string path = test::scratch("kl-base-f32.kld");
  const int n_chunks = perplexity_chunk_count(ids->size(), po);
  ASSERT_GE(n_chunks, 2);
  auto w = logprob_writer::create(path, {po.n_ctx, f32->n_vocab(), n_chunks,
                                         std::vector<int32_t>(ids->begin(), ids->begin() + int64_t(n_chunks) * po.n_ctx)});
  ASSERT_TRUE(w.is_ok());
  const int64_t nv = f32->n_vocab();
  std::vector<uint16_t> records;
  po.on_rows = [&](std::span<const float> rows, std::span<const int32_t> chunk, thread_pool& pool) -> status {
    encode_logprob_rows(rows, chunk.subspan(chunk.size() / 2 + 1), nv, pool, records);
    return w->write(records);
  };
  auto base_ppl = perplexity(*f32, *ids, po);
  ASSERT_TRUE(base_ppl.is_ok());
  ASSERT_TRUE(w->finish().is_ok());

  // The oracle: sum over positions of KL(p_f32 || p_q8) from the float logits of both models.
  double kl_sum = 0.0;
  int64_t count = 0;
  std::vector<float> lf, lq;
  for (int c = 0; c < n_chunks; ++c) {
    std::vector<int32_t> chunk(ids->begin() + int64_t(c) * po.n_ctx, ids->begin() + int64_t(c + 1) * po.n_ctx);
    chunk[0] = *f32->added_bos();
    ASSERT_TRUE(eval_scored_half(*f32, chunk, lf).is_ok());
    ASSERT_TRUE(eval_scored_half(*q8, chunk, lq).is_ok());
    for (int k = 0; k < po.n_ctx - 1 - po.n_ctx / 2; ++k, ++count) {
      const auto p = log_softmax(lf.data() + int64_t(k) * nv, nv), q = log_softmax(lq.data() + int64_t(k) * nv, nv);
      for (int64_t i = 0; i < nv; ++i) kl_sum += std::exp(p[size_t(i)]) * (p[size_t(i)] - q[size_t(i)]);
    }
  }
  const double oracle = kl_sum / double(count);

  for (session* model : {q8.get(), f32.get()}) {
    auto base = logprob_reader::open(path);
    ASSERT_TRUE(base.is_ok()) << base.message();
    auto sums = kl_divergence(*model, *base, 2);
    ASSERT_TRUE(sums.is_ok()) << sums.message();
    const kl_divergence_report r = report(*sums, true);
    EXPECT_EQ(r.count, count);
    if (model == q8.get()) {
      EXPECT_GT(oracle, 0.0);
      // The record's half-step rounding of each log-probability (1.2e-4) moves the mean a little
      // (measured: 1.307e-4 against 1.299e-4).
      EXPECT_NEAR(r.kld.value, oracle, 2e-6 + 0.03 * oracle) << "oracle " << oracle;
    } else {
      EXPECT_NEAR(r.kld.value, 0.0, 2e-5);
      EXPECT_GE(r.same_top.value, 0.95);  // two tokens within a record's step tie for the base's top
      EXPECT_NEAR(r.ppl.value, base_ppl->ppl, 1e-9 * base_ppl->ppl);
    }
  }
}

// The report's statistics against textbook formulas on known per-position values: means with the
// sample error (n - 1) once there are more than 10 positions, the covariance of the two NLLs, the
// ratio and difference of the perplexities, the RMS of Δp and the share of equal top tokens.
TEST(kl_divergence, report_statistics) {
  kl_divergence_sums s;
  std::vector<double> nll, base, kld, dp;
  for (int i = 0; i < 200; ++i) {
    nll.push_back(1.0 + 0.01 * (i % 17));
    base.push_back(0.9 + 0.012 * (i % 13));
    kld.push_back(0.001 * (i % 7));
    dp.push_back(0.002 * ((i % 5) - 2));
  }
  for (size_t i = 0; i < nll.size(); ++i) {
    s.nll += nll[i];
    s.nll2 += nll[i] * nll[i];
    s.nll_base += base[i];
    s.nll_base2 += base[i] * base[i];
    s.nll_nll_base += nll[i] * base[i];
    s.kld += kld[i];
    s.kld2 += kld[i] * kld[i];
    s.p_diff += dp[i];
    s.p_diff2 += dp[i] * dp[i];
    s.p_diff4 += std::pow(dp[i], 4);
    s.n_same_top += i % 4 != 0;
    ++s.count;
    s.kld_values.push_back(float(kld[i]));
    s.p_diff_values.push_back(float(dp[i]));
  }
  const double n = 200;
  auto mean = [&](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m += x;
    return m / n;
  };
  auto sd_of_mean = [&](const std::vector<double>& v) {
    const double m = mean(v);
    double ss = 0;
    for (double x : v) ss += (x - m) * (x - m);
    return std::sqrt(ss / n / (n - 1));  // population variance over n - 1, as llama.cpp
  };
  const kl_divergence_report r = report(s, true);
  EXPECT_NEAR(r.ppl.value, std::exp(mean(nll)), 1e-12);
  EXPECT_NEAR(r.ppl.error, std::exp(mean(nll)) * sd_of_mean(nll), 1e-12);
  EXPECT_NEAR(r.ppl_base.value, std::exp(mean(base)), 1e-12);
  double cov = 0;
  for (size_t i = 0; i < nll.size(); ++i) cov += (nll[i] - mean(nll)) * (base[i] - mean(base));
  cov = cov / n / (n - 1);
  EXPECT_NEAR(r.log_ppl_correlation, cov / (sd_of_mean(nll) * sd_of_mean(base)), 1e-9);
  EXPECT_NEAR(r.log_ppl_ratio.value, mean(nll) - mean(base), 1e-12);
  const double ratio_err = std::sqrt(std::pow(sd_of_mean(nll), 2) + std::pow(sd_of_mean(base), 2) - 2 * cov);
  EXPECT_NEAR(r.log_ppl_ratio.error, ratio_err, 1e-9);
  EXPECT_NEAR(r.ppl_ratio.value, std::exp(mean(nll) - mean(base)), 1e-12);
  EXPECT_NEAR(r.ppl_diff.value, std::exp(mean(nll)) - std::exp(mean(base)), 1e-12);
  EXPECT_NEAR(r.kld.value, mean(kld), 1e-12);
  EXPECT_NEAR(r.kld.error, sd_of_mean(kld), 1e-12);
  EXPECT_NEAR(r.p_diff.value, mean(dp), 1e-12);
  std::vector<double> dp2;
  for (double x : dp) dp2.push_back(x * x);
  EXPECT_NEAR(r.p_diff_rms.value, std::sqrt(mean(dp2)), 1e-12);
  EXPECT_NEAR(r.p_diff_rms.error, 0.5 / std::sqrt(mean(dp2)) * sd_of_mean(dp2), 1e-12);
  EXPECT_NEAR(r.same_top.value, 0.75, 1e-12);
  EXPECT_NEAR(r.same_top.error, std::sqrt(0.75 * 0.25 / (n - 1)), 1e-12);
  EXPECT_EQ(r.kld_sorted.front(), 0.0f);
  EXPECT_FLOAT_EQ(r.kld_sorted.back(), 0.006f);
  EXPECT_FLOAT_EQ(percentile(r.kld_sorted, 0.5f), 0.003f);
  // Ten positions or fewer: no error estimates (llama.cpp's rule).
  kl_divergence_sums few;
  few.count = 10;
  few.kld = 0.01;
  few.kld2 = 0.001;
  EXPECT_EQ(report(few, false).kld.error, 0.0);
}

TEST(kl_divergence, refuses_another_vocabulary) {
  const std::string path = test::scratch("kl-vocab3.kld");
  auto w = logprob_writer::create(path, {4, 3, 1, {0, 1, 2, 1}});
  ASSERT_TRUE(w.is_ok());
  ASSERT_TRUE(w->write(std::vector<uint16_t>(logprob_record_words(3), 0)).is_ok());
  ASSERT_TRUE(w->finish().is_ok());
  auto base = logprob_reader::open(path);
  ASSERT_TRUE(base.is_ok());
  auto s = open_model("brown-f32.gguf");
  auto r = kl_divergence(*s, *base, 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("over 3 tokens and this model's vocabulary has 1024"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace glia
