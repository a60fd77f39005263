// glia bench's JSON (llama-bench's field names plus the bandwidth figures), the bandwidth probe,
// and the streaming GGUF writer (same bytes as gguf::writer, which is itself checked against
// llama.cpp's files in tests/gguf).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <tuple>

#include "backend/cpu/cpu_kernels.h"
#include "core/bandwidth.h"
#include "gguf/gguf.h"
#include "model/quantize.h"
#include "tools_test_util.h"

namespace glia {
namespace {

using tools_test::quote;
using tools_test::run_cli;

// A path that is not UTF-8 (a Latin-1 folder name) still gives valid JSON, and the table names a
// model under a billion parameters in millions, as llama-bench does.
TEST(bench, reports_survive_any_file_name) {
  namespace fs = std::filesystem;
  const fs::path copy = fs::path(test::scratch("bench-names")) / "caf\xe9.gguf";
  fs::create_directories(copy.parent_path());
  fs::copy_file(test::testdata("models/brown-q8_0.gguf"), copy, fs::copy_options::overwrite_existing);
  for (const char* format : {"json", "jsonl"}) {
    auto r = run_cli("bench -m " + quote(copy.string()) + " -p 4 -n 0 -r 1 -t 1 --bandwidth-mib 16 -o " + format);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(std::string(format) == "json" ? r.out : r.out.substr(0, r.out.find('\n')));
    const auto& t = j.is_array() ? j[0] : j;
    EXPECT_EQ(t["model_filename"], fs::path(copy.parent_path() / "caf\xef\xbf\xbd.gguf").string()) << format;
  }
  auto r = run_cli("bench -m " + quote(copy.string()) + " -p 4 -n 0 -r 1 -t 1 --bandwidth-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("|     2.56 M |"), std::string::npos) << r.out;  // 2,558,400 parameters
}

// llama-bench's ranges in the integer lists: FIRST-LAST, FIRST-LAST+STEP, FIRST-LAST*MULT.
TEST(bench, integer_lists_take_llama_bench_ranges) {
  const std::string model = quote(test::testdata("models/stories260K.gguf"));
  auto r = run_cli("bench -m " + model + " -p 4-16*2,3 -n 1-5+3 -t 1 -r 1 --bandwidth-mib 16 -o jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::pair<int, int>> tests;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    tests.emplace_back(j["n_prompt"].get<int>(), j["n_gen"].get<int>());
  }
  const std::vector<std::pair<int, int>> want = {{4, 0}, {8, 0}, {16, 0}, {3, 0}, {0, 1}, {0, 4}};
  EXPECT_EQ(tests, want);
  for (const char* bad : {"5-1", "1-8*1", "3-9+0", "1-", "2x", "1-70000"}) {
    r = run_cli("bench -m " + model + " -p " + bad + " -n 0 -r 1 --bandwidth-mib 16");
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_NE(r.err.find(std::string("-p '") + bad + "'"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(bench, json_has_llama_bench_fields_and_positive_figures) {
  const std::string model = test::testdata("models/brown-q8_0.gguf");
  auto r = run_cli("bench -m " + quote(model) + " -p 16 -n 8 -r 2 -t 1 --bandwidth-mib 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);  // stdout is the JSON array and nothing else
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["n_prompt"], 16);
  EXPECT_EQ(j[0]["n_gen"], 0);
  EXPECT_EQ(j[1]["n_prompt"], 0);
  EXPECT_EQ(j[1]["n_gen"], 8);
  for (const auto& t : j) {
    EXPECT_EQ(t["model_filename"], model);
    EXPECT_EQ(t["n_threads"], 1);
    EXPECT_GT(t["model_size"].get<double>(), 2.5e6);  // tensor data of the 2,751,072-byte file
    EXPECT_LT(t["model_size"].get<double>(), 2751072.0);
    EXPECT_EQ(t["model_n_params"], 2558400);           // README section 6
    EXPECT_NE(t["model_type"].get<std::string>().find("llama"), std::string::npos);
    EXPECT_NE(t["model_type"].get<std::string>().find("Q8_0"), std::string::npos);
    for (const char* k : {"avg_ts", "weight_bytes_per_token", "bandwidth_gbps", "bandwidth_fraction"}) {
      ASSERT_TRUE(t.contains(k)) << k;
      EXPECT_GT(t[k].get<double>(), 0.0) << k;
    }
    EXPECT_GE(t["stddev_ts"].get<double>(), 0.0);
    ASSERT_EQ(t["samples_ts"].size(), 2u);
    for (const auto& s : t["samples_ts"]) EXPECT_GT(s.get<double>(), 0.0);
    for (const auto& s : t["samples_ns"]) EXPECT_TRUE(s.is_number_unsigned()) << s;  // llama-bench's integers
    EXPECT_TRUE(std::regex_match(t["test_time"].get<std::string>(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
        << t["test_time"];
  }
  EXPECT_LE(j[0]["test_time"].get<std::string>(), j[1]["test_time"].get<std::string>());
  // Decode reads each weight once per token, and the K and V of the positions it sees (a little
  // here: positions 1..8): the fraction is t/s x bytes / bandwidth.
  const auto& tg = j[1];
  EXPECT_EQ(j[0]["n_depth"], 0);
  const double tg_bytes = tg["weight_bytes_per_token"].get<double>() + tg["kv_bytes_per_token"].get<double>();
  EXPECT_GT(tg["kv_bytes_per_token"].get<double>(), 0.0);
  EXPECT_LT(tg["kv_bytes_per_token"].get<double>(), 0.05 * tg_bytes);
  EXPECT_NEAR(tg["bandwidth_fraction"].get<double>(), tg["avg_ts"].get<double>() * tg_bytes / (tg["bandwidth_gbps"].get<double>() * 1e9),
              1e-9);
  // Decode also gets a probe pass before each repetition and after the last; the figure against
  // them uses their median (of 3: the middle one). The prompt test gets none.
  EXPECT_FALSE(j[0].contains("bandwidth_between_gbps"));
  ASSERT_EQ(tg["bandwidth_between_samples_gbps"].size(), 3u);
  std::vector<double> between;
  for (const auto& v : tg["bandwidth_between_samples_gbps"]) between.push_back(v.get<double>());
  std::sort(between.begin(), between.end());
  EXPECT_GT(between[0], 0.0);
  EXPECT_DOUBLE_EQ(tg["bandwidth_between_gbps"].get<double>(), between[1]);
  EXPECT_NEAR(tg["bandwidth_between_fraction"].get<double>(), tg["avg_ts"].get<double>() * tg_bytes / (between[1] * 1e9), 1e-9);
  // Q8_0 layer matrices are repacked at load (panels as large as the rows they hold) where the host
  // has matmul kernels (not on a build with the scalar ones only), unless asked not to.
  EXPECT_EQ(tg["no_repack"], false);
  if (cpu::kernels().mm(dtype::q8_0))
    EXPECT_GT(tg["repacked_bytes"].get<double>(), 0.0);
  else
    EXPECT_EQ(tg["repacked_bytes"].get<double>(), 0.0);
  EXPECT_LE(tg["repacked_bytes"].get<double>(), tg["weight_bytes_per_token"].get<double>() * 1.01);
  r = run_cli("bench -m " + quote(model) + " -p 0 -n 2 -r 1 -t 1 --bandwidth-mib 16 --no-repack --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plain = nlohmann::json::parse(r.out);
  EXPECT_EQ(plain[0]["no_repack"], true);
  EXPECT_EQ(plain[0]["repacked_bytes"], 0);
}

TEST(bench, skips_tests_and_prints_a_table) {
  const std::string model = test::testdata("models/stories260K.gguf");
  auto r = run_cli("bench -m " + quote(model) + " -p 0 -n 4 -r 1 -t 1 --bandwidth-mib 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["n_gen"], 4);
  r = run_cli("bench -m " + quote(model) + " -p 8 -n 4 -r 1 -t 1 --bandwidth-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" pp8 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tg4 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of the read bandwidth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the median of 2 probe passes run between its repetitions"), std::string::npos) << r.out;
  r = run_cli("bench -m " + quote(model) + " -p 0 -n 0");
  EXPECT_EQ(r.exit_code, 1);
}

// A file that is not a model: exit 1, stdout empty in every format (no table header before the
// error), and the message names the path once.
TEST(bench, a_file_that_is_not_a_model_leaves_stdout_empty) {
  const std::string not_model = test::testdata("README.md");
  for (const char* format : {"md", "json", "csv"}) {
    auto r = run_cli("bench -m " + quote(not_model) + " -p 0 -n 2 -r 1 -t 1 --bandwidth-mib 16 -o " + format);
    EXPECT_EQ(r.exit_code, 1) << format;
    EXPECT_EQ(r.out, "") << format;
    EXPECT_NE(r.err.find("not a GGUF file"), std::string::npos) << r.err;
    const size_t first = r.err.find(not_model);
    ASSERT_NE(first, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(not_model, first + 1), std::string::npos) << r.err;
  }
}

// A later model that does not load loses only its own records: the finished ones are written
// (still one valid document), with the error and a failing status.
TEST(bench, a_bad_later_model_keeps_the_finished_records) {
  const std::string good = test::testdata("models/brown-q8_0.gguf"), bad = test::testdata("README.md");
  auto r = run_cli("bench -m " + quote(good) + "," + quote(bad) + " -p 4 -n 0 -r 1 -t 1 --bandwidth-mib 16 -o json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a GGUF file"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u) << r.out;
  EXPECT_EQ(j[0]["model_filename"], good);
  // --json is -o json: with another -o it is a contradiction, refused.
  EXPECT_NE(run_cli("bench -m " + quote(good) + " -p 4 -n 0 --json -o csv").exit_code, 0);
}

// -d fills the context before each test (llama-bench's n_depth): the tests are named "pp8 @ d24",
// and decode's bandwidth figure counts the K and V it reads at those positions.
TEST(bench, depth_fills_the_context_first) {
  const std::string model = test::testdata("models/brown-q8_0.gguf");
  auto r = run_cli("bench -m " + quote(model) + " -p 8 -n 4 -d 24 -r 1 -t 1 --bandwidth-mib 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  for (const auto& t : j) EXPECT_EQ(t["n_depth"], 24);
  EXPECT_EQ(j[0]["kv_bytes_per_token"], 0);
  // The Brown model's layers (README section 6): each decode step at positions 24..27 reads the K
  // and V (f16) of the 25..28 positions it sees.
  const auto& tg = j[1];
  auto opened = gguf::file::open(model);
  ASSERT_TRUE(opened.is_ok()) << opened.message();
  const gguf::file& f = **opened;
  const int64_t n_layer = *f.get_int("llama.block_count"), n_embd = *f.get_int("llama.embedding_length");
  const int64_t n_head = *f.get_int("llama.attention.head_count"), n_kv = *f.get_int("llama.attention.head_count_kv");
  const double per_position = double(n_layer) * 2.0 * double(n_kv) * double(n_embd / n_head) * 2.0;
  EXPECT_EQ(tg["kv_bytes_per_token"].get<double>(), std::floor(per_position * 26.5));
  EXPECT_NEAR(tg["bandwidth_fraction"].get<double>(),
              tg["avg_ts"].get<double>() * (tg["weight_bytes_per_token"].get<double>() + tg["kv_bytes_per_token"].get<double>()) /
                  (tg["bandwidth_gbps"].get<double>() * 1e9),
              1e-9);
  r = run_cli("bench -m " + quote(model) + " -p 8 -n 4 -d 24 -r 1 -t 1 --bandwidth-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" pp8 @ d24 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tg4 @ d24 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of KV cache) ="), std::string::npos) << r.out;
}

TEST(bench, cpu_isa_caps_the_kernels_and_is_reported) {
  const std::string model = test::testdata("models/stories260K.gguf");
  auto r = run_cli("bench -m " + quote(model) + " -p 0 -n 2 -r 1 -t 1 --bandwidth-mib 16 --cpu-isa scalar --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["cpu_isa"], "scalar");
  r = run_cli("bench -m " + quote(model) + " -p 0 -n 2 -r 1 -t 1 --bandwidth-mib 16 --backend cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("CPU kernels: "), std::string::npos) << r.out;
  r = run_cli("bench -m " + quote(model) + " -p 0 -n 2 --cpu-isa avx9");
  EXPECT_NE(r.exit_code, 0);
}

// As llama-bench, -m, -p, -n, -d, -t and --cpu-isa take lists (comma-separated or repeated): every
// model x threads x instruction set runs every test: for each depth (outermost, as in llama-bench),
// the prompt tests first.
TEST(bench, lists_run_every_configuration) {
  const std::string a = test::testdata("models/stories260K.gguf"), b = test::testdata("models/brown-q8_0.gguf");
  for (const std::string& threads : {std::string("-t 1,2"), std::string("-t 1 -t 2")}) {
    auto r = run_cli("bench -m " + quote(a) + "," + quote(b) + " -p 8 -n 2,3 -d 0,4 " + threads +
                     " -r 2 --bandwidth-mib 16 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 2u * 2u * 6u) << threads;
    size_t i = 0;
    for (const std::string& model : {a, b})
      for (int t : {1, 2})
        for (auto [p, n, d] : {std::tuple{8, 0, 0}, {0, 2, 0}, {0, 3, 0}, {8, 0, 4}, {0, 2, 4}, {0, 3, 4}}) {
          const auto& x = j[i++];
          EXPECT_EQ(x["model_filename"], model);
          EXPECT_EQ(x["n_threads"], t);
          EXPECT_EQ(x["n_prompt"], p);
          EXPECT_EQ(x["n_gen"], n);
          EXPECT_EQ(x["n_depth"], d);
          EXPECT_EQ(x["samples_ts"].size(), 2u);
          EXPECT_GT(x["bandwidth_gbps"].get<double>(), 0.0);
        }
  }
  // The table names each configuration's notes, and the backend column the instruction set when a
  // run compares several.
  auto r = run_cli("bench -m " + quote(a) + " -p 0 -n 2 -r 1 -t 1 --cpu-isa scalar,best --bandwidth-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| CPU scalar "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(a + " (llama"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scalar, 1 thread:"), std::string::npos) << r.out;
  r = run_cli("bench -m " + quote(a) + " -p 0 -n 2 --cpu-isa scalar,avx9");
  EXPECT_NE(r.exit_code, 0);
  r = run_cli("bench -m " + quote(a) + " -p 8,-1 -n 2");
  EXPECT_NE(r.exit_code, 0);
}

// --pg PP,TG (llama-bench's -pg): a prompt then generated tokens, timed together, t/s over both;
// after each depth's prompt and generation tests. No bandwidth figure: it mixes the two.
TEST(bench, pg_times_a_prompt_and_its_generation_together) {
  const std::string model = test::testdata("models/stories260K.gguf");
  auto r = run_cli("bench -m " + quote(model) + " -p 0 -n 2 --pg 8,4 --pg 3,1 -d 0,5 -r 2 -t 1 --bandwidth-mib 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 6u);
  for (auto [i, p, n, d] : {std::tuple{1, 8, 4, 0}, {2, 3, 1, 0}, {4, 8, 4, 5}, {5, 3, 1, 5}}) {
    const auto& t = j[size_t(i)];
    EXPECT_EQ(t["n_prompt"], p);
    EXPECT_EQ(t["n_gen"], n);
    EXPECT_EQ(t["n_depth"], d);
    ASSERT_EQ(t["samples_ns"].size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      const double ts = t["samples_ts"][k].get<double>();
      EXPECT_NEAR(ts, double(p + n) * 1e9 / t["samples_ns"][k].get<double>(), 1e-6 * ts);
    }
    EXPECT_EQ(t["bandwidth_fraction"], 0.0);
    EXPECT_FALSE(t.contains("bandwidth_between_gbps"));
  }
  r = run_cli("bench -m " + quote(model) + " -p 0 -n 0 --pg 8,4 -r 1 -t 1 --bandwidth-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" pp8+tg4 |"), std::string::npos) << r.out;
  for (const char* bad : {"8", "8,0", "0,4", "8,4,2", "x,4"}) {
    r = run_cli("bench -m " + quote(model) + " -p 0 -n 0 --pg " + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
  }
}

// -o jsonl and csv carry the same records as -o json (the same as --json): one line each, or a
// header of the scalar fields and one row per test.
TEST(bench, output_formats) {
  const std::string model = test::testdata("models/stories260K.gguf");
  const std::string args = "bench -m " + quote(model) + " -p 4 -n 2 -r 1 -t 1 --bandwidth-mib 16 ";
  auto r = run_cli(args + "-o jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["n_prompt"], 4);
  EXPECT_EQ(lines[1]["n_gen"], 2);
  EXPECT_TRUE(lines[1].contains("bandwidth_between_gbps"));
  r = run_cli(args + "-o csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream csv(r.out);
  std::string header, pp, tg, extra;
  ASSERT_TRUE(std::getline(csv, header) && std::getline(csv, pp) && std::getline(csv, tg));
  EXPECT_FALSE(std::getline(csv, extra));
  const auto count = [](const std::string& s, char c) { return std::count(s.begin(), s.end(), c); };
  EXPECT_EQ(count(pp, ','), count(header, ','));  // the file name holds no comma here
  EXPECT_EQ(count(tg, ','), count(header, ','));
  EXPECT_EQ(header.find("samples_ns"), std::string::npos);
  EXPECT_NE(header.find("bandwidth_between_gbps"), std::string::npos);  // a field only decode has
  EXPECT_NE(header.find("n_prompt"), std::string::npos);
  EXPECT_NE(pp.find("\"" + model + "\""), std::string::npos) << pp;
  EXPECT_NE(run_cli(args + "-o xml").exit_code, 0);
}

// --ub (llama-bench's -ub) sets the prompt chunk size per configuration: one more dimension of the
// cross product, a table column, and the prompt's weight reads (once per chunk) in its figures.
TEST(bench, ubatch_sizes_are_configurations) {
  const std::string model = test::testdata("models/stories260K.gguf");
  auto r = run_cli("bench -m " + quote(model) + " -p 16 -n 0 --ub 4,16 -r 1 -t 1 --bandwidth-mib 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["n_ubatch"], 4);
  EXPECT_EQ(j[1]["n_ubatch"], 16);
  // Four chunks read the weights four times: the fraction is four times that of one chunk's rate.
  for (const auto& t : j) {
    const double reads = t["n_ubatch"] == 4 ? 4.0 : 1.0;
    EXPECT_NEAR(t["bandwidth_fraction"].get<double>(),
                t["avg_ts"].get<double>() * reads / 16.0 * t["weight_bytes_per_token"].get<double>() /
                    (t["bandwidth_gbps"].get<double>() * 1e9),
                1e-9);
  }
  r = run_cli("bench -m " + quote(model) + " -p 16 -n 0 --ub 4 -r 1 -t 1 --bandwidth-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| n_ubatch |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("|        4 |           pp16 |"), std::string::npos) << r.out;
  EXPECT_NE(run_cli("bench -m " + quote(model) + " -p 16 --ub 0").exit_code, 0);
}

// --interleave: the same tests and results, the repetitions run in rounds over the configurations;
// each decode test still gets a probe pass before each of its repetitions and after the last.
TEST(bench, interleave_runs_rounds_over_configurations) {
  const std::string a = test::testdata("models/stories260K.gguf"), b = test::testdata("models/brown-q8_0.gguf");
  auto r = run_cli("bench -m " + quote(a) + " -m " + quote(b) + " -p 4 -n 2 -t 1 -r 3 --interleave --bandwidth-mib 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(j[i]["model_filename"], i < 2 ? a : b);
    EXPECT_EQ(j[i]["n_prompt"], i % 2 ? 0 : 4);
    EXPECT_EQ(j[i]["samples_ts"].size(), 3u);
    EXPECT_GT(j[i]["avg_ts"].get<double>(), 0.0);
    if (i % 2) {
      EXPECT_EQ(j[i]["bandwidth_between_samples_gbps"].size(), 4u);
    }
  }
  r = run_cli("bench -m " + quote(a) + "," + quote(b) + " -p 4 -n 2 -t 1 -r 2 --interleave --bandwidth-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" pp4 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(b + " (llama"), std::string::npos) << r.out;
}

TEST(bandwidth, probe_reads_the_whole_buffer) {
  bandwidth_options o;
  o.n_threads = 2;
  o.buffer_bytes = size_t(32) << 20;
  o.n_passes = 2;
  auto r = measure_read_bandwidth(o);
  ASSERT_TRUE(r.is_ok()) << r.message();  // the probe checks its own read checksum
  EXPECT_GT(r->bytes_per_second, 1e8);
  EXPECT_GE(r->bytes_per_second, r->worst_bytes_per_second);
  EXPECT_EQ(r->n_threads, 2);
  EXPECT_EQ(r->buffer_bytes, size_t(32) << 20);
  // Slices whose streams are staggered (with a tail read after them) and ones too short for it.
  for (auto [threads, bytes] : {std::pair{1, (size_t(1) << 20) + 12345}, {3, size_t(5) << 20}, {4, size_t(1) << 20}}) {
    o.n_threads = threads;
    o.buffer_bytes = bytes;
    auto small = measure_read_bandwidth(o);
    ASSERT_TRUE(small.is_ok()) << threads << " threads, " << bytes << " bytes: " << small.message();
    EXPECT_GT(small->bytes_per_second, 1e8);
  }
  o.buffer_bytes = 1000;
  EXPECT_FALSE(measure_read_bandwidth(o).is_ok());
  o.buffer_bytes = size_t(32) << 20;
  o.n_passes = 0;
  EXPECT_FALSE(measure_read_bandwidth(o).is_ok());
}

// A probe kept for passes spread over a run: each pass reads the whole buffer again (its checksum
// holds every time), and measure() takes the fastest and slowest of its passes.
TEST(bandwidth, probe_kept_for_later_passes) {
  bandwidth_options o;
  o.n_threads = 2;
  o.buffer_bytes = size_t(8) << 20;
  auto probe = read_probe::create(o);
  ASSERT_TRUE(probe.is_ok()) << probe.message();
  EXPECT_EQ(probe->buffer_bytes(), size_t(8) << 20);
  EXPECT_EQ(probe->n_threads(), 2);
  for (int i = 0; i < 3; ++i) {
    auto bps = probe->pass();
    ASSERT_TRUE(bps.is_ok()) << bps.message();
    EXPECT_GT(*bps, 1e8);
  }
  auto r = probe->measure(4);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r->n_passes, 4);
  EXPECT_GE(r->bytes_per_second, r->worst_bytes_per_second);
  EXPECT_GT(r->worst_bytes_per_second, 0.0);
  EXPECT_FALSE(probe->measure(0).is_ok());
  read_probe moved = std::move(*probe);
  EXPECT_TRUE(moved.pass().is_ok());
  o.buffer_bytes = 1000;
  EXPECT_FALSE(read_probe::create(o).is_ok());
}

std::vector<std::pair<std::string, gguf::value>> sample_metadata(uint32_t alignment) {
  gguf::writer w;  // built through the writer's setters, read back through the reader
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 1);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_bool("flag", true);
  w.set_string_array("tokenizer.ggml.tokens", {"a", "bb", "\xE2\x96\x81x"});
  w.set_i32_array("ints", {1, -2, 3});
  if (alignment != 32) w.set_alignment(alignment);
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.is_ok());
  static std::vector<std::vector<uint8_t>> keep;  // from_memory needs the bytes to outlive the file
  keep.push_back(*bytes);
  auto f = gguf::file::from_memory(keep.back());
  EXPECT_TRUE(f.is_ok()) << f.message();
  return (*f)->metadata();
}

TEST(stream_writer, writes_the_same_bytes_as_the_gguf_writer) {
  for (uint32_t alignment : {32u, 64u}) {
    const auto md = sample_metadata(alignment);
    std::vector<planned_tensor> plan = {{"a.weight", {32, 3}, dtype::q8_0}, {"b", {5}, dtype::f32}, {"c", {7, 2}, dtype::f16}};
    gguf::writer w;
    for (const auto& [k, v] : md) w.set(k, v);
    std::vector<std::vector<uint8_t>> data;
    for (const auto& t : plan) {
      const size_t n = row_bytes(t.type, t.dims[0]) * size_t(t.dims.size() > 1 ? t.dims[1] : 1);
      std::vector<uint8_t> d(n);
      for (size_t i = 0; i < n; ++i) d[i] = uint8_t(i * 7 + 1);
      ASSERT_TRUE(w.add_tensor(t.name, uint32_t(t.type), t.dims, d).is_ok());
      data.push_back(std::move(d));
    }
    const std::string path = test::scratch("stream-" + std::to_string(alignment) + ".gguf");
    auto s = gguf_stream_writer::create(path, md, plan);
    ASSERT_TRUE(s.is_ok()) << s.message();
    for (const auto& d : data) ASSERT_TRUE((*s)->write_next(d).is_ok());
    ASSERT_TRUE((*s)->finish().is_ok());
    EXPECT_EQ(test::read_file(path), *w.to_bytes()) << "alignment " << alignment;
  }
}

TEST(stream_writer, rejects_wrong_sizes_and_removes_unfinished_files) {
  namespace fs = std::filesystem;
  const fs::path path = test::scratch("stream-unfinished.gguf");
  fs::remove(path);
  auto leftovers = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(path.parent_path()))
      n += e.path().filename().string().starts_with(path.filename().string());
    return n;
  };
  {
    auto s = gguf_stream_writer::create(path.string(), sample_metadata(32), {{"t", {32, 2}, dtype::q8_0}});
    ASSERT_TRUE(s.is_ok()) << s.message();
    std::vector<uint8_t> wrong(10);
    EXPECT_FALSE((*s)->write_next(wrong).is_ok());
    EXPECT_FALSE((*s)->finish().is_ok());  // the tensor is missing
    EXPECT_FALSE(fs::exists(path));        // written under a temporary name until finished
    EXPECT_EQ(leftovers(), 1);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(leftovers(), 0);
}

}  // namespace
}  // namespace glia
