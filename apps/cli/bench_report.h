// glia bench's results and how they are shown: the llama-bench-style table with the bandwidth notes
// under it, or the JSON array (llama-bench's field names plus the bandwidth figures).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/bandwidth.h"
#include "model/model.h"

namespace glia::cli::bench {

double mean(const std::vector<double>& v);
double median(std::vector<double> v);
double stddev(const std::vector<double>& v);  // sample (n - 1), as llama-bench reports it

// Where a configuration ran: the backend's label and, on a GPU, the device's name.
struct run_place {
  std::string label = "CPU";
  std::string device;
  std::string cpu_isa = {};  // the CPU kernels' instruction set (CPU backend; "" elsewhere)
};

// A prompt test (n_gen 0), a generation test (n_prompt 0), or llama-bench's combined test: a
// prompt followed by generated tokens, timed together (both set).
struct test_result {
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;
  bool prompt_only() const { return n_gen == 0; }
  bool gen_only() const { return n_prompt == 0; }
  uint64_t kv_bytes_per_token = 0;  // decode: K and V bytes attention reads per token, mean over the test
  std::string test_time;  // when its first timed repetition began (utc_now), llama-bench's test_time
  std::vector<double> samples_ns;
  std::vector<double> samples_ts;
  double avg_ts = 0, stddev_ts = 0, avg_ns = 0, stddev_ns = 0;
  double bandwidth_fraction = 0;
  // Decode on the CPU: probe passes timed before each repetition and after the last, their median,
  // and decode's streaming rate over it.
  std::vector<double> between_bps;
  double between_median_bps = 0, between_fraction = 0;
  // llama-bench's names: pp512, tg128, pp512+tg128, and "pp512 @ d4096" when the context held
  // n_depth tokens first.
  std::string name() const;
};

struct model_facts {
  std::string filename, type_label;
  uint64_t size = 0, n_params = 0, weight_bytes_per_token = 0;
  uint64_t repacked_bytes = 0;  // weights the backend repacked at load, and the time it took
  double repack_seconds = 0;
  uint64_t one_token_steps = 0, replayed_steps = 0;  // decode steps, and those run as one submission
};

// The file's size, parameters and type label ("llama 1.1B Q4_0") as llama-bench names them.
model_facts describe(const std::string& path, const model& m);

// One configuration's results: a model on a backend with a thread count and instruction set.
struct config_report {
  model_facts facts;
  run_place place;
  int n_threads = 0;
  int n_ubatch = 0;
  bool repack = true;
  bandwidth_result bw;
  std::vector<test_result> tests;
};

// The table, printed a row at a time (rows appear as tests finish), then the notes of every
// configuration. show_isa adds the kernels' instruction set to the backend column (when a run
// compares several), show_ubatch a column of the prompt chunk size (when it was given).
class table_printer {
 public:
  table_printer(bool show_isa, bool show_ubatch) : show_isa_(show_isa), show_ubatch_(show_ubatch) {}
  void header() const;
  void row(const config_report& c, const test_result& t) const;
  // Bandwidth, repacking and decode-fraction notes; `titled` heads each with its configuration.
  void notes(const config_report& c, bool titled) const;

 private:
  bool show_isa_, show_ubatch_;
  std::string backend_cell(const config_report& c) const;
  int backend_width() const { return show_isa_ ? 14 : 7; }  // "CPU avx512vnni" or "backend"
};

nlohmann::json to_json(std::span<const config_report> configs);
// The time now as llama-bench's test_time writes it (ISO 8601, UTC).
std::string utc_now();

// The records of to_json as `format`: json (the array, indented), jsonl (one object per line) or csv
// (a header of the scalar fields, then one row per test; arrays such as samples_ns are left out).
std::string format_records(const nlohmann::json& records, const std::string& format);

}  // namespace glia::cli::bench
