// Helpers for the tools tests: running the CLI, and comparing a model's logits with the pack's
// golden rows (llama.cpp's logits).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "glia/session.h"
#include "cli_runner.h"
#include "test_support.h"

namespace glia::tools_test {

using run_result = test::cli_result;
using test::quote;
using test::run_cli;

inline nlohmann::json golden_manifest(const std::string& stem) {
  std::ifstream in(test::testdata("golden/" + stem + ".json"));
  return nlohmann::json::parse(in);
}

struct logit_deviation {
  double max_abs = 0.0;
  int rows = 0;
  int golden_top1_in_top5 = 0;  // rows whose golden argmax is among the model's 5 largest logits
  int top1_equal = 0;
  double sum_sq_err = 0.0, sum_sq_golden = 0.0;
  // Root-mean-square error relative to the root-mean-square golden logit.
  double relative_rms() const { return sum_sq_golden > 0 ? std::sqrt(sum_sq_err / sum_sq_golden) : 0.0; }
};

// Evaluates every golden prompt of `stem` on `model_path` (F32 KV cache, whole prompt at once, as
// the goldens were made) and compares the stored rows.
inline logit_deviation compare_with_golden(const std::string& model_path, const std::string& stem) {
  logit_deviation d;
  const auto m = golden_manifest(stem);
  const int64_t n_vocab = m["n_vocab"];
  const auto bytes = test::read_file(test::testdata(m["logits_file"]));
  std::vector<float> golden(bytes.size() / 4);
  std::memcpy(golden.data(), bytes.data(), golden.size() * 4);
  session_options so;
  so.model_path = model_path;
  so.n_ctx = 512;
  so.kv_type = "f32";
  so.n_threads = 2;
  auto s = session::create(so);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s) return d;
  for (const auto& p : m["prompts"]) {
    const std::vector<int32_t> ids = p["ids"].get<std::vector<int32_t>>();
    std::vector<float> logits;
    (*s)->reset();
    status st = (*s)->eval(ids, true, logits);
    EXPECT_TRUE(st.is_ok()) << st.message();
    if (!st) return d;
    int row = p["row_offset"];
    for (int pos : p["stored_positions"]) {
      const float* got = logits.data() + size_t(pos) * size_t(n_vocab);
      const float* want = golden.data() + size_t(row) * size_t(n_vocab);
      int64_t g_arg = 0, m_arg = 0;
      for (int64_t v = 0; v < n_vocab; ++v) {
        d.max_abs = std::max(d.max_abs, double(std::fabs(got[v] - want[v])));
        d.sum_sq_err += double(got[v] - want[v]) * double(got[v] - want[v]);
        d.sum_sq_golden += double(want[v]) * double(want[v]);
        if (want[v] > want[g_arg]) g_arg = v;
        if (got[v] > got[m_arg]) m_arg = v;
      }
      int above = 0;  // logits strictly larger than the one at the golden argmax
      for (int64_t v = 0; v < n_vocab; ++v) above += got[v] > got[g_arg];
      d.golden_top1_in_top5 += above < 5;
      d.top1_equal += g_arg == m_arg;
      ++d.rows;
      ++row;
    }
  }
  return d;
}

}  // namespace glia::tools_test
