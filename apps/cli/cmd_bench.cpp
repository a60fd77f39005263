// glia bench: prompt-processing and token-generation speed in the manner of llama-bench, plus the
// decode speed as a fraction of the machine's measured memory read bandwidth (decode streams every
// weight once per token, so bandwidth / weight bytes is its ceiling).
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "commands.h"
#include "common_options.h"
#include "core/bandwidth.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/quantize.h"

namespace glia::cli {
namespace {

constexpr int k_max_ubatch = 512;  // llama-bench's default n_ubatch

struct bench_options {
  std::string model;
  int n_prompt = 512;
  int n_gen = 128;
  int n_depth = 0;
  int n_threads = 0;
  int reps = 5;
  int bandwidth_mib = 1024;
  bool json = false;
  bool repack = true;
  std::string backend = "auto";
  std::string cpu_isa = "best";
};

// Where the bench ran: the backend's label and, on a GPU, the device's name.
struct run_place {
  std::string label = "CPU";
  std::string device;
  std::string cpu_isa = {};  // the CPU kernels' instruction set (CPU backend; "" elsewhere)
};

struct test_result {
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;
  uint64_t kv_bytes_per_token = 0;  // decode: K and V bytes attention reads per token, mean over the test
  std::vector<double> samples_ns;
  std::vector<double> samples_ts;
  double avg_ts = 0, stddev_ts = 0, avg_ns = 0, stddev_ns = 0;
  double bandwidth_fraction = 0;
  // Decode on the CPU: probe passes timed before each repetition and after the last, their median,
  // and decode's streaming rate over it.
  std::vector<double> between_bps;
  double between_median_bps = 0, between_fraction = 0;
  // llama-bench's names: pp512, tg128, and "pp512 @ d4096" when the context held n_depth tokens first.
  std::string name() const {
    const std::string test = n_prompt > 0 ? fmt::format("pp{}", n_prompt) : fmt::format("tg{}", n_gen);
    return n_depth > 0 ? fmt::format("{} @ d{}", test, n_depth) : test;
  }
};

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

// Sample standard deviation (n - 1), as llama-bench reports it.
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

// Position of a decode test's first timed step: after the context, or after a 1-token start.
int decode_start(int depth) { return std::max(depth, 1); }

class bench_runner {
 public:
  bench_runner(const model& m, backend& b, kv_cache& cache) : m_(m), fwd_(m, b), cache_(cache), rng_(1234) {}

  std::vector<int32_t> random_tokens(int n) {
    std::uniform_int_distribution<int32_t> dist(0, int32_t(m_.profile.n_vocab - 1));
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = dist(rng_);
    return ids;
  }

  // One prompt of n tokens in one call after `depth` tokens of context; returns nanoseconds.
  result<double> prompt(int n, int depth) {
    GLIA_TRY(fill(depth));
    const auto ids = random_tokens(n);
    const auto t0 = std::chrono::steady_clock::now();
    GLIA_TRY(fwd_.run(cache_, ids, depth, false, logits_));
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }

  // n single-token decode steps after `depth` tokens of context (a 1-token start when depth is 0;
  // neither is timed), from position decode_start(depth); returns nanoseconds.
  result<double> generate(int n, int depth) {
    const int start = decode_start(depth);
    GLIA_TRY(fill(start));
    const auto ids = random_tokens(n);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) GLIA_TRY(fwd_.run(cache_, std::span(ids).subspan(size_t(i), 1), start + i, false, logits_));
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }

  const forward_pass& forward() const { return fwd_; }

 private:
  const model& m_;
  forward_pass fwd_;
  kv_cache& cache_;
  std::mt19937 rng_;
  std::vector<float> logits_;

  // An empty cache, then n random tokens of context evaluated as prompts (in the cache's batches).
  status fill(int n) {
    cache_.clear();
    if (n <= 0) return status::ok();
    return fwd_.run(cache_, random_tokens(n), 0, false, logits_);
  }
};

// between: where given, one bandwidth-probe pass timed before each repetition and after the last.
result<test_result> run_test(bench_runner& r, int n_prompt, int n_gen, int n_depth, int reps,
                             const std::function<result<double>()>& between = {}) {
  test_result t;
  t.n_prompt = n_prompt;
  t.n_gen = n_gen;
  t.n_depth = n_depth;
  auto once = [&]() { return n_prompt > 0 ? r.prompt(n_prompt, n_depth) : r.generate(n_gen, n_depth); };
  // Warm-up: faults in the mapped weights and wakes the threads (a short run suffices for decode).
  auto warm = n_prompt > 0 ? r.prompt(n_prompt, n_depth) : r.generate(std::min(n_gen, 2), n_depth);
  if (!warm) return warm.take_error();
  const int n_tokens = n_prompt > 0 ? n_prompt : n_gen;
  auto probe_pass = [&]() -> status {
    if (!between) return status::ok();
    auto bps = between();
    if (!bps) return bps.take_error();
    t.between_bps.push_back(*bps);
    return status::ok();
  };
  for (int i = 0; i < reps; ++i) {
    GLIA_TRY(probe_pass());
    auto ns = once();
    if (!ns) return ns.take_error();
    t.samples_ns.push_back(*ns);
    t.samples_ts.push_back(double(n_tokens) * 1e9 / std::max(*ns, 1.0));
  }
  GLIA_TRY(probe_pass());
  t.avg_ns = mean(t.samples_ns);
  t.stddev_ns = stddev(t.samples_ns);
  t.avg_ts = mean(t.samples_ts);
  t.stddev_ts = stddev(t.samples_ts);
  t.between_median_bps = median(t.between_bps);
  return t;
}

std::string human_size(double bytes) {
  return bytes >= double(1 << 30) ? fmt::format("{:.2f} GiB", bytes / double(1 << 30)) : fmt::format("{:.2f} MiB", bytes / double(1 << 20));
}

struct model_facts {
  std::string filename, type_label;
  uint64_t size = 0, n_params = 0, weight_bytes_per_token = 0;
  uint64_t repacked_bytes = 0;  // weights the backend repacked at load, and the time it took
  double repack_seconds = 0;
  uint64_t one_token_steps = 0, replayed_steps = 0;  // decode steps, and those run as one submission
};

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

void print_table(const model_facts& mf, const bench_options& o, const std::vector<test_result>& tests,
                 const bandwidth_result& bw, const run_place& place) {
  fmt::print("| {:<30} | {:>10} | {:>10} | {:<7} | {:>7} | {:>14} | {:>20} |\n", "model", "size", "params", "backend",
             "threads", "test", "t/s");
  fmt::print("| {:-<30} | {:->10} | {:->10} | {:-<7} | {:->7} | {:->14} | {:->20} |\n", "", ":", ":", "", ":", ":", ":");
  for (const auto& t : tests)
    fmt::print("| {:<30} | {:>10} | {:>8.2f} B | {:<7} | {:>7} | {:>14} | {:>20} |\n", mf.type_label, human_size(double(mf.size)),
               double(mf.n_params) / 1e9, place.label, o.n_threads, t.name(), fmt::format("{:.2f} ± {:.2f}", t.avg_ts, t.stddev_ts));
  if (place.device.empty()) {
    fmt::print("\ndecode reads {} of weights per token; read bandwidth {:.2f} GB/s ({} threads, best of {} passes over {} MiB{})\n",
               human_size(double(mf.weight_bytes_per_token)), bw.bytes_per_second / 1e9, bw.n_threads, bw.n_passes,
               bw.buffer_bytes >> 20, bw.used_avx2 ? ", AVX2" : "");
    fmt::print("CPU kernels: {}\n", place.cpu_isa);
  } else {
    fmt::print("\ndecode reads {} of weights per token; {}: device copy bandwidth {:.2f} GB/s (bytes read + written, best of {} copies of {} MiB)\n",
               human_size(double(mf.weight_bytes_per_token)), place.device, bw.bytes_per_second / 1e9, bw.n_passes,
               bw.buffer_bytes >> 20);
  }
  if (mf.repacked_bytes > 0)
    fmt::print("weights repacked at load: {} in {:.2f} s\n", human_size(double(mf.repacked_bytes)), mf.repack_seconds);
  else
    fmt::print("weights used in the file's layout (no repacking)\n");
  if (mf.replayed_steps > 0)
    fmt::print("one-token steps replayed as one submission: {} of {}\n", mf.replayed_steps, mf.one_token_steps);
  for (const auto& t : tests) {
    if (t.n_gen <= 0) continue;
    const double bytes = double(mf.weight_bytes_per_token + t.kv_bytes_per_token);
    const std::string read = t.kv_bytes_per_token == 0 ? human_size(double(mf.weight_bytes_per_token))
                             : fmt::format("({} of weights + {} of KV cache)", human_size(double(mf.weight_bytes_per_token)),
                                           human_size(double(t.kv_bytes_per_token)));
    fmt::print("{}: {:.2f} t/s x {} = {:.2f} GB/s = {:.1f}% of the read bandwidth\n", t.name(), t.avg_ts, read,
               t.avg_ts * bytes / 1e9, 100.0 * t.bandwidth_fraction);
    if (!t.between_bps.empty())
      fmt::print("{}: {:.1f}% of {:.2f} GB/s, the median of {} probe passes run between its repetitions (slowest {:.2f}, fastest {:.2f})\n",
                 t.name(), 100.0 * t.between_fraction, t.between_median_bps / 1e9, t.between_bps.size(),
                 *std::min_element(t.between_bps.begin(), t.between_bps.end()) / 1e9,
                 *std::max_element(t.between_bps.begin(), t.between_bps.end()) / 1e9);
  }
}

nlohmann::json to_json(const model_facts& mf, const bench_options& o, int n_ubatch, const test_result& t,
                       const bandwidth_result& bw, const run_place& place) {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json j{
      {"model_filename", mf.filename},
      {"model_type", mf.type_label},
      {"model_size", mf.size},
      {"model_n_params", mf.n_params},
      {"backends", place.label},
      {"device", place.device},
      {"cpu_isa", place.cpu_isa},
      {"n_batch", std::max(o.n_prompt, 1)},
      {"n_ubatch", n_ubatch},
      {"n_threads", o.n_threads},
      {"type_k", "f16"},
      {"type_v", "f16"},
      {"n_prompt", t.n_prompt},
      {"n_gen", t.n_gen},
      {"n_depth", t.n_depth},
      {"test_time", when},
      {"avg_ns", uint64_t(t.avg_ns)},
      {"stddev_ns", uint64_t(t.stddev_ns)},
      {"avg_ts", t.avg_ts},
      {"stddev_ts", t.stddev_ts},
      {"samples_ns", t.samples_ns},
      {"samples_ts", t.samples_ts},
      {"weight_bytes_per_token", mf.weight_bytes_per_token},
      {"kv_bytes_per_token", t.kv_bytes_per_token},
      {"bandwidth_gbps", bw.bytes_per_second / 1e9},
      {"bandwidth_fraction", t.bandwidth_fraction},
      {"no_repack", !o.repack},
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

int run_bench(bench_options o) {
  if (o.n_prompt == 0 && o.n_gen == 0) {
    fmt::print(stderr, "error: -p 0 and -n 0: nothing to measure\n");
    return 1;
  }
  if (o.n_threads <= 0) o.n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  auto m = load_model(o.model);
  if (!m) {
    fmt::print(stderr, "error: {}\n", m.message());
    return 1;
  }
  const model& md = **m;
  // The context (-d) is filled in batches like a prompt.
  const int n_ubatch = std::clamp(std::max(o.n_prompt, o.n_depth), 1, k_max_ubatch);
  auto made = make_backend(o.backend, o.n_threads, o.repack, o.cpu_isa);
  if (!made) {
    fmt::print(stderr, "error: {}\n", made.message());
    return 1;
  }
  std::unique_ptr<backend> be = std::move(*made);
  run_place place;
  std::optional<cuda_device_facts> gpu;
  if (be->name() == "cuda") {
    gpu = cuda_describe_device();
    place = run_place{"CUDA", gpu->name};
  }
  place.cpu_isa = be->cpu_isa();
  const int n_ctx = std::max({o.n_depth + o.n_prompt, decode_start(o.n_depth) + o.n_gen, 1});
  auto cache = kv_cache::create(md.profile, n_ctx, n_ubatch, dtype::f16, *be);
  if (!cache) {
    fmt::print(stderr, "error: {}\n", cache.message());
    return 1;
  }
  bench_runner runner(md, *be, *cache);
  // The read bandwidth is probed before and after the tests and the best pass kept: on a shared
  // host a probe can only be slowed down by others, and one run during a busy moment made decode
  // look faster than the memory (103% of the probe in one of our runs). On the CPU the probe's
  // buffer stays allocated through the tests, and decode also gets passes between its repetitions:
  // on such a host the passes of one minute can differ by 2x (2 threads: 15-33 GB/s in one of our
  // runs), so the best pass is a ceiling that decode, timed over seconds, rarely sees.
  bandwidth_options bo;
  bo.n_threads = o.n_threads;
  bo.buffer_bytes = size_t(o.bandwidth_mib) << 20;
  std::optional<read_probe> reader;
  if (!gpu) {
    auto made_probe = read_probe::create(bo);
    if (!made_probe) {
      fmt::print(stderr, "error: {}\n", made_probe.message());
      return 1;
    }
    reader.emplace(std::move(*made_probe));
  }
  auto probe = [&, first = true]() mutable -> result<bandwidth_result> {
    if (!gpu) return reader->measure(bo.n_passes);
    // On a GPU the ceiling is the device memory's: a large device-to-device copy. The first probe
    // is the one made when the device was named.
    const cuda_device_facts f = std::exchange(first, false) ? *gpu : cuda_describe_device();
    bandwidth_result r;
    r.bytes_per_second = r.worst_bytes_per_second = f.copy_bytes_per_second;
    r.n_passes = f.copies_timed;
    r.buffer_bytes = f.copy_bytes;
    return r;
  };
  auto bw = probe();
  if (!bw) {
    fmt::print(stderr, "error: {}\n", bw.message());
    return 1;
  }

  std::vector<test_result> tests;
  for (auto [np, ng] : {std::pair{o.n_prompt, 0}, std::pair{0, o.n_gen}}) {
    if (np == 0 && ng == 0) continue;
    std::function<result<double>()> between;
    if (ng > 0 && reader) between = [&] { return reader->pass(); };
    auto t = run_test(runner, np, ng, o.n_depth, o.reps, between);
    if (!t) {
      fmt::print(stderr, "error: {}: {}\n", np > 0 ? "prompt test" : "generation test", t.message());
      return 1;
    }
    tests.push_back(std::move(*t));
  }

  auto after = probe();
  if (!after) {
    fmt::print(stderr, "error: {}\n", after.message());
    return 1;
  }
  bw->worst_bytes_per_second = std::min(bw->worst_bytes_per_second, after->worst_bytes_per_second);
  bw->bytes_per_second = std::max(bw->bytes_per_second, after->bytes_per_second);
  bw->n_passes += after->n_passes;
  model_facts mf = describe(o.model, md);
  mf.repacked_bytes = runner.forward().prepared_bytes();
  mf.repack_seconds = runner.forward().prepare_seconds();
  mf.one_token_steps = runner.forward().one_token_steps();
  mf.replayed_steps = runner.forward().replayed_steps();
  // Weight bytes streamed per second over the read bandwidth: decode reads every weight once per
  // token; a prompt reads them once per chunk of n_ubatch tokens.
  // Decode also reads the K and V of every position it sees (the mean over the test's steps; it
  // matters with -d).
  for (auto& t : tests) {
    const double reads_per_token = t.n_gen > 0 ? 1.0 : std::ceil(double(t.n_prompt) / n_ubatch) / double(t.n_prompt);
    double bytes = reads_per_token * double(mf.weight_bytes_per_token);
    if (t.n_gen > 0) {
      const int start = decode_start(t.n_depth);
      double kv = 0;
      for (int i = 0; i < t.n_gen; ++i) kv += double(kv_cache::bytes_read(md.profile, start + i + 1, dtype::f16));
      t.kv_bytes_per_token = uint64_t(kv / t.n_gen);
      bytes += double(t.kv_bytes_per_token);
    }
    t.bandwidth_fraction = t.avg_ts * bytes / bw->bytes_per_second;
    if (!t.between_bps.empty()) t.between_fraction = t.avg_ts * bytes / t.between_median_bps;
  }
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& t : tests) arr.push_back(to_json(mf, o, n_ubatch, t, *bw, place));
    fmt::print("{}\n", arr.dump(2));
  } else {
    print_table(mf, o, tests, *bw, place);
  }
  return 0;
}

}  // namespace

command_fn add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "measure prompt and generation speed (like llama-bench) against the memory bandwidth");
  auto o = std::make_shared<bench_options>();
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens evaluated in one batch (0: skip)")->check(CLI::Range(0, 1 << 16))->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "tokens generated one at a time (0: skip)")->check(CLI::Range(0, 1 << 16))->capture_default_str();
  cmd->add_option("-d,--n-depth", o->n_depth, "tokens of context evaluated (not timed) before each test, as llama-bench's -d")
      ->check(CLI::Range(0, 1 << 20))->capture_default_str();
  cmd->add_option("-t,--threads", o->n_threads, "threads (default: one per core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--backend", o->backend, "compute backend: auto (cuda when a GPU is present, else cpu), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  add_cpu_isa_option(cmd, o->cpu_isa);
  cmd->add_option("-r,--repetitions", o->reps, "timed repetitions of each test")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--bandwidth-mib", o->bandwidth_mib, "buffer of the bandwidth probe in MiB (keep it far above the LLC)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_flag("!--no-repack", o->repack, "compute from the file's weight layout (no repacking at load)");
  cmd->add_flag("--json", o->json, "print only a JSON array, one object per test (llama-bench's field names)");
  return [o]() { return run_bench(*o); };
}

}  // namespace glia::cli
