#include "bench_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "model/quantize.h"
#include "core/json_text.h"

namespace glia::cli::bench {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / double(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

std::string test_result::name() const {
  const std::string test = gen_only()      ? fmt::format("tg{}", n_gen)
                           : prompt_only() ? fmt::format("pp{}", n_prompt)
                                           : fmt::format("pp{}+tg{}", n_prompt, n_gen);
  return n_depth > 0 ? fmt::format("{} @ d{}", test, n_depth) : test;
}

namespace {

std::string threads(int n) { return fmt::format("{} thread{}", n, n == 1 ? "" : "s"); }

std::string human_size(double bytes) {
  return bytes >= double(1 << 30) ? fmt::format("{:.2f} GiB", bytes / double(1 << 30))
                                  : fmt::format("{:.2f} MiB", bytes / double(1 << 20));
}

}  // namespace

model_facts describe(const std::string& path, const model& m) {
  model_facts f;
  f.filename = path;
  for (const auto& t : m.file->tensors()) {
    f.size += t.n_bytes;
    f.n_params += uint64_t(t.n_elements());
  }
  f.weight_bytes_per_token = m.decode_weight_bytes();
  const double p = double(f.n_params);
  // (thresholds at what rounds up to the next unit: 999.9M is "1.0B", not "1000M")
  const std::string params = p >= 999.5e6 ? fmt::format("{:.1f}B", p / 1e9)
                             : p >= 999.5e3 ? fmt::format("{:.0f}M", p / 1e6)
                                            : fmt::format("{:.0f}K", p / 1e3);
  // general.file_type names the mix; files without it are named by their most common matrix type
  // (as llama.cpp guesses it).
  std::string ftype;
  if (auto ft = m.file->get_int("general.file_type"))
    if (const auto* info = find_file_type(file_type(uint32_t(*ft)))) ftype = info->name;
  if (ftype.empty()) {
    std::map<uint32_t, int> counts;
    for (const auto& t : m.file->tensors())
      if (t.n_dims == 2) ++counts[t.type];
    auto best = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; });
    ftype = best == counts.end() ? "?" : std::string(type_name(best->first));
  }
  f.type_label = fmt::format("{} {} {}", m.profile.arch, params, ftype);
  return f;
}

std::string table_printer::backend_cell(const config_report& c) const {
  return show_isa_ && !c.place.cpu_isa.empty() ? fmt::format("{} {}", c.place.label, c.place.cpu_isa) : c.place.label;
}

void table_printer::header() const {
  const int bw = backend_width();
  const std::string ub = show_ubatch_ ? fmt::format(" {:>8} |", "n_ubatch") : "";
  const std::string ub_rule = show_ubatch_ ? fmt::format(" {:->8} |", ":") : "";
  fmt::print("| {:<30} | {:>10} | {:>10} | {:<{}} | {:>7} |{} {:>14} | {:>20} |\n", "model", "size", "params", "backend", bw,
             "threads", ub, "test", "t/s");
  fmt::print("| {:-<30} | {:->10} | {:->10} | {:-<{}} | {:->7} |{} {:->14} | {:->20} |\n", "", ":", ":", "", bw, ":", ub_rule,
             ":", ":");
}

void table_printer::row(const config_report& c, const test_result& t) const {
  const model_facts& mf = c.facts;
  const std::string ub = show_ubatch_ ? fmt::format(" {:>8} |", c.n_ubatch) : "";
  // llama-bench's units: millions below a billion parameters.
  const double p = double(mf.n_params);
  const std::string params = p < 1e9 ? fmt::format("{:.2f} M", p / 1e6) : fmt::format("{:.2f} B", p / 1e9);
  fmt::print("| {:<30} | {:>10} | {:>10} | {:<{}} | {:>7} |{} {:>14} | {:>20} |\n", mf.type_label,
             human_size(double(mf.size)), params, backend_cell(c), backend_width(), c.n_threads, ub,
             t.name(), fmt::format("{:.2f} ± {:.2f}", t.avg_ts, t.stddev_ts));
  std::fflush(stdout);
}

void table_printer::notes(const config_report& c, bool titled) const {
  const model_facts& mf = c.facts;
  const bandwidth_result& bw = c.bw;
  if (titled)
    fmt::print("\n{} ({}), {}, {}{}:\n", mf.filename, mf.type_label, backend_cell(c), threads(c.n_threads),
               show_ubatch_ ? fmt::format(", n_ubatch {}", c.n_ubatch) : "");
  else
    fmt::print("\n");
  if (c.place.device.empty()) {
    fmt::print("decode reads {} of weights per token; read bandwidth {:.2f} GB/s ({}, best of {} passes over {} MiB{})\n",
               human_size(double(mf.weight_bytes_per_token)), bw.bytes_per_second / 1e9, threads(bw.n_threads), bw.n_passes,
               bw.buffer_bytes >> 20, bw.used_avx2 ? ", AVX2" : "");
    fmt::print("CPU kernels: {}\n", c.place.cpu_isa);
  } else {
    fmt::print("decode reads {} of weights per token; {}: device copy bandwidth {:.2f} GB/s (bytes read + written, best of {} copies of {} MiB)\n",
               human_size(double(mf.weight_bytes_per_token)), c.place.device, bw.bytes_per_second / 1e9, bw.n_passes,
               bw.buffer_bytes >> 20);
  }
  if (mf.repacked_bytes > 0)
    fmt::print("weights repacked at load: {} in {:.2f} s\n", human_size(double(mf.repacked_bytes)), mf.repack_seconds);
  else
    fmt::print("weights used in the file's layout (no repacking)\n");
  if (mf.replayed_steps > 0)
    fmt::print("one-token steps replayed as one submission: {} of {}\n", mf.replayed_steps, mf.one_token_steps);
  for (const auto& t : c.tests) {
    if (!t.gen_only()) continue;
    const double bytes = double(mf.weight_bytes_per_token + t.kv_bytes_per_token);
    const std::string read = t.kv_bytes_per_token == 0
                                 ? human_size(double(mf.weight_bytes_per_token))
                                 : fmt::format("({} of weights + {} of KV cache)", human_size(double(mf.weight_bytes_per_token)),
                                               human_size(double(t.kv_bytes_per_token)));
    fmt::print("{}: {:.2f} t/s x {} = {:.2f} GB/s = {:.1f}% of the read bandwidth{}\n", t.name(), t.avg_ts, read,
               t.avg_ts * bytes / 1e9, 100.0 * t.bandwidth_fraction,
               t.bandwidth_fraction > 1.0 ? " (more than memory gives: the weights are read from the CPU's caches)" : "");
    if (!t.between_bps.empty())
      fmt::print("{}: {:.1f}% of {:.2f} GB/s, the median of {} probe passes run between its repetitions (slowest {:.2f}, fastest {:.2f})\n",
                 t.name(), 100.0 * t.between_fraction, t.between_median_bps / 1e9, t.between_bps.size(),
                 *std::min_element(t.between_bps.begin(), t.between_bps.end()) / 1e9,
                 *std::max_element(t.between_bps.begin(), t.between_bps.end()) / 1e9);
  }
}

namespace {

nlohmann::json test_json(const config_report& c, const test_result& t, const std::string& when) {
  const model_facts& mf = c.facts;
  std::vector<uint64_t> samples_ns;  // whole nanoseconds, as llama-bench writes them
  for (double ns : t.samples_ns) samples_ns.push_back(uint64_t(std::llround(ns)));
  nlohmann::json j{
      {"model_filename", mf.filename},
      {"model_type", mf.type_label},
      {"model_size", mf.size},
      {"model_n_params", mf.n_params},
      {"backends", c.place.label},
      {"device", c.place.device},
      {"cpu_isa", c.place.cpu_isa},
      {"n_batch", std::max(t.n_prompt, 1)},
      {"n_ubatch", c.n_ubatch},
      {"n_threads", c.n_threads},
      {"type_k", "f16"},
      {"type_v", "f16"},
      {"n_prompt", t.n_prompt},
      {"n_gen", t.n_gen},
      {"n_depth", t.n_depth},
      {"test_time", t.test_time.empty() ? when : t.test_time},
      {"avg_ns", uint64_t(t.avg_ns)},
      {"stddev_ns", uint64_t(t.stddev_ns)},
      {"avg_ts", t.avg_ts},
      {"stddev_ts", t.stddev_ts},
      {"samples_ns", samples_ns},
      {"samples_ts", t.samples_ts},
      {"weight_bytes_per_token", mf.weight_bytes_per_token},
      {"kv_bytes_per_token", t.kv_bytes_per_token},
      {"bandwidth_gbps", c.bw.bytes_per_second / 1e9},
      {"bandwidth_fraction", t.bandwidth_fraction},
      {"no_repack", !c.repack},
      {"repacked_bytes", mf.repacked_bytes},
      {"one_token_steps", mf.one_token_steps},
      {"replayed_steps", mf.replayed_steps},
      {"repack_seconds", mf.repack_seconds},
  };
  if (!t.between_bps.empty()) {
    j["bandwidth_between_gbps"] = t.between_median_bps / 1e9;
    j["bandwidth_between_fraction"] = t.between_fraction;
    j["bandwidth_between_samples_gbps"] = t.between_bps;
    for (auto& v : j["bandwidth_between_samples_gbps"]) v = v.get<double>() / 1e9;
  }
  return j;
}

}  // namespace

std::string utc_now() {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return when;
}

nlohmann::json to_json(std::span<const config_report> configs) {
  const std::string when = utc_now();
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& c : configs)
    for (const auto& t : c.tests) arr.push_back(test_json(c, t, when));
  return arr;
}

namespace {

std::string csv_cell(const nlohmann::json& v) {
  if (!v.is_string()) return v.dump();
  std::string out = "\"";
  for (char ch : v.get<std::string>()) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

}  // namespace

std::string format_records(const nlohmann::json& records, const std::string& format) {
  if (format == "json") return json_text(records, 2) + "\n";
  std::string out;
  if (format == "jsonl") {
    for (const auto& r : records) out += json_text(r) + "\n";
    return out;
  }
  // csv: every scalar field any record has (in name order), empty where a record lacks it.
  std::set<std::string> names;
  for (const auto& r : records)
    for (const auto& [k, v] : r.items())
      if (!v.is_array() && !v.is_object()) names.insert(k);
  const std::vector<std::string> keys(names.begin(), names.end());
  if (keys.empty()) return out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? "," : "") + keys[i];
  out += "\n";
  for (const auto& r : records) {
    for (size_t i = 0; i < keys.size(); ++i) out += (i ? "," : "") + (r.contains(keys[i]) ? csv_cell(r[keys[i]]) : std::string());
    out += "\n";
  }
  return out;
}

}  // namespace glia::cli::bench
