// glia bench: prompt-processing and token-generation speed in the manner of llama-bench, plus the
// decode speed as a fraction of the machine's measured memory read bandwidth (decode streams every
// weight once per token, so bandwidth / weight bytes is its ceiling).
// As llama-bench, -m, -p, -n, -d, -t, --ub (and --cpu-isa) take lists (comma-separated or repeated):
// every model x threads x instruction set x ubatch size is a configuration that runs every test.
// --interleave runs the repetitions in rounds over all configurations, so that on a shared host a
// slow minute falls on each of them alike and their ratios hold.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "bench_ranges.h"
#include "bench_report.h"
#include "commands.h"
#include "common_options.h"
#include "core/bandwidth.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace glia::cli {
namespace {

using bench::config_report;
using bench::test_result;

constexpr int k_max_ubatch = 512;  // llama-bench's default n_ubatch

struct bench_options {
  std::vector<std::string> models;
  std::vector<int> n_prompt;
  std::vector<int> n_gen;
  std::vector<int> n_depth;
  std::vector<int> n_threads;  // empty: one per core
  std::vector<std::string> pg;  // "PP,TG": a prompt then generated tokens, timed together
  std::vector<int> n_ubatch;    // prompt chunk sizes; empty: the largest prompt or depth, at most 512
  std::vector<std::string> cpu_isa{"best"};
  int reps = 5;
  int bandwidth_mib = 1024;
  bool json = false;          // --json: the same as -o json
  std::string output = "md";  // md (the table and notes), json, jsonl, csv
  bool repack = true;
  bool interleave = false;
  std::string backend = "auto";
  // The integer lists as typed (bench_ranges.h), expanded into the lists above before the run.
  std::vector<std::string> n_prompt_text{"512"}, n_gen_text{"128"}, n_depth_text{"0"}, n_threads_text, n_ubatch_text;

  status expand_lists() {
    const struct {
      const char* flag;
      const std::vector<std::string>& text;
      std::vector<int>& values;
      int lo, hi;
    } lists[] = {{"-p", n_prompt_text, n_prompt, 0, 1 << 16},
                 {"-n", n_gen_text, n_gen, 0, 1 << 16},
                 {"-d", n_depth_text, n_depth, 0, 1 << 20},
                 {"-t", n_threads_text, n_threads, 0, 1024},
                 {"--ub", n_ubatch_text, n_ubatch, 1, 1 << 16}};
    for (const auto& l : lists) {
      auto values = bench::expand_int_list(l.flag, l.text, l.lo, l.hi);
      if (!values) return values.take_error();
      l.values = std::move(*values);
    }
    return {};
  }
};

// One test of a configuration: a prompt of n_prompt tokens, n_gen decode steps, or both in turn,
// after n_depth tokens of context.
struct test_spec {
  int n_prompt = 0, n_gen = 0, n_depth = 0;
};

// "512,128" as a prompt-then-generation test (both at least 1), or nothing.
std::optional<test_spec> parse_pg(const std::string& s) {
  int pp = 0, tg = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d,%d%c", &pp, &tg, &tail) != 2 || pp < 1 || tg < 1 || pp > (1 << 16) || tg > (1 << 16))
    return std::nullopt;
  return test_spec{pp, tg, 0};
}

// llama-bench's order: for each depth, the prompt tests, the generation tests, then the combined
// ones. Errors: a malformed --pg.
result<std::vector<test_spec>> test_list(const bench_options& o) {
  std::vector<test_spec> combined;
  for (const auto& pg : o.pg) {
    const auto t = parse_pg(pg);
    if (!t) return make_error("--pg {}: expected PROMPT,GEN (two positive counts)", pg);
    combined.push_back(*t);
  }
  std::vector<test_spec> tests;
  for (int d : o.n_depth) {
    for (int p : o.n_prompt)
      if (p > 0) tests.push_back({p, 0, d});
    for (int n : o.n_gen)
      if (n > 0) tests.push_back({0, n, d});
    for (const auto& t : combined) tests.push_back({t.n_prompt, t.n_gen, d});
  }
  return tests;
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

  // A prompt of np tokens after `depth` tokens of context, then ng single-token decode steps, timed
  // together; returns nanoseconds.
  result<double> prompt_then_generate(int np, int ng, int depth) {
    GLIA_TRY(fill(depth));
    const auto ids = random_tokens(np + ng);
    const auto t0 = std::chrono::steady_clock::now();
    GLIA_TRY(fwd_.run(cache_, std::span(ids).first(size_t(np)), depth, false, logits_));
    for (int i = 0; i < ng; ++i)
      GLIA_TRY(fwd_.run(cache_, std::span(ids).subspan(size_t(np + i), 1), depth + np + i, false, logits_));
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

// The CPU read-bandwidth probes, one per thread count (each holds a buffer of --bandwidth-mib).
class probes {
 public:
  explicit probes(int mib) : mib_(mib) {}
  result<read_probe*> get(int n_threads) {
    auto it = probes_.find(n_threads);
    if (it == probes_.end()) {
      bandwidth_options bo;
      bo.n_threads = n_threads;
      bo.buffer_bytes = size_t(mib_) << 20;
      auto made = read_probe::create(bo);
      if (!made) return made.take_error();
      it = probes_.emplace(n_threads, std::move(*made)).first;
    }
    return &it->second;
  }
  // Frees the buffers of other thread counts (a run that goes one configuration at a time).
  void keep_only(int n_threads) { std::erase_if(probes_, [&](const auto& p) { return p.first != n_threads; }); }

 private:
  int mib_;
  std::map<int, read_probe> probes_;
};

struct config_spec {
  std::string model_path;
  int n_threads = 0;
  std::string cpu_isa;
  int n_ubatch = 0;  // 0: from the tests
};

// A configuration loaded and ready: its backend (with the weights it repacked), KV cache and runner,
// its tests' results so far.
class config_run {
 public:
  static result<std::unique_ptr<config_run>> create(const config_spec& spec, std::shared_ptr<const model> m,
                                                    const bench_options& o, const std::vector<test_spec>& tests,
                                                    probes& pr) {
    auto c = std::unique_ptr<config_run>(new config_run());
    c->model_ = std::move(m);
    const model& md = *c->model_;
    config_report& r = c->report_;
    r.n_threads = spec.n_threads;
    r.repack = o.repack;
    // The context (-d) is filled in batches like a prompt.
    int most = 1, n_ctx = 1;
    for (const auto& t : tests) {
      most = std::max({most, t.n_prompt, t.n_depth});
      n_ctx = std::max({n_ctx, t.n_depth + t.n_prompt + t.n_gen, t.n_gen > 0 ? decode_start(t.n_depth) + t.n_gen : 0});
    }
    r.n_ubatch = spec.n_ubatch > 0 ? spec.n_ubatch : std::min(most, k_max_ubatch);
    auto made = make_backend(o.backend, spec.n_threads, o.repack, spec.cpu_isa);
    if (!made) return made.take_error();
    c->backend_ = std::move(*made);
    if (c->backend_->name() == "cuda") {
      c->gpu_ = cuda_describe_device();
      r.place = bench::run_place{"CUDA", c->gpu_->name};
    } else {
      auto probe = pr.get(spec.n_threads);
      if (!probe) return probe.take_error();
      c->probe_ = *probe;
    }
    r.place.cpu_isa = c->backend_->cpu_isa();
    // Rings as run and serve make them (kv_cache::ring_batch_floor), so that a small --ub measures
    // the sliding-window reads those do.
    auto cache = kv_cache::create(md.profile, n_ctx, r.n_ubatch, dtype::f16, *c->backend_, kv_cache::ring_batch_floor);
    if (!cache) return cache.take_error();
    c->cache_.emplace(std::move(*cache));
    c->runner_.emplace(md, *c->backend_, *c->cache_);
    for (const auto& t : tests) {
      test_result tr;
      tr.n_prompt = t.n_prompt;
      tr.n_gen = t.n_gen;
      tr.n_depth = t.n_depth;
      r.tests.push_back(std::move(tr));
    }
    r.facts = bench::describe(spec.model_path, md);
    return c;
  }

  // The read bandwidth, probed before and after the tests with the best pass kept: on a shared
  // host a probe can only be slowed down by others, and one run during a busy moment made decode
  // look faster than the memory (103% of the probe in one of our runs). Decode also gets passes
  // between its repetitions: on such a host the passes of one minute can differ by 2x (2 threads:
  // 15-33 GB/s in one of our runs), so the best pass is a ceiling that decode, timed over seconds,
  // rarely sees. On a GPU the ceiling is the device memory's: a large device-to-device copy (the
  // first probe is the one made when the device was named).
  status probe_ceiling() {
    bandwidth_result now;
    if (probe_) {
      auto m = probe_->measure(bandwidth_options{}.n_passes);
      if (!m) return m.take_error();
      now = *m;
    } else {
      const cuda_device_facts f = std::exchange(gpu_named_, false) ? *gpu_ : cuda_describe_device();
      now.bytes_per_second = now.worst_bytes_per_second = f.copy_bytes_per_second;
      now.n_passes = f.copies_timed;
      now.buffer_bytes = f.copy_bytes;
    }
    bandwidth_result& bw = report_.bw;
    if (bw.n_passes == 0) {
      bw = now;
    } else {
      bw.worst_bytes_per_second = std::min(bw.worst_bytes_per_second, now.worst_bytes_per_second);
      bw.bytes_per_second = std::max(bw.bytes_per_second, now.bytes_per_second);
      bw.n_passes += now.n_passes;
    }
    return status::ok();
  }

  // Faults in the mapped weights and wakes the threads (a short run suffices for decode).
  status warm(size_t i) {
    const test_result& t = report_.tests[i];
    auto w = run(t, std::min(t.n_gen, 2));
    return w ? status::ok() : w.take_error();
  }

  // One timed repetition (decode: after a probe pass).
  status repetition(size_t i) {
    test_result& t = report_.tests[i];
    GLIA_TRY(between_pass(t));
    if (t.test_time.empty()) t.test_time = bench::utc_now();
    auto ns = run(t, t.n_gen);
    if (!ns) return ns.take_error();
    t.samples_ns.push_back(*ns);
    t.samples_ts.push_back(double(t.n_prompt + t.n_gen) * 1e9 / std::max(*ns, 1.0));
    return status::ok();
  }

  // After the last repetition: the closing probe pass and the statistics.
  status close(size_t i) {
    test_result& t = report_.tests[i];
    GLIA_TRY(between_pass(t));
    t.avg_ns = bench::mean(t.samples_ns);
    t.stddev_ns = bench::stddev(t.samples_ns);
    t.avg_ts = bench::mean(t.samples_ts);
    t.stddev_ts = bench::stddev(t.samples_ts);
    t.between_median_bps = bench::median(t.between_bps);
    return status::ok();
  }

  // Once every test is closed: what the backend did at load and with decode, and each test's
  // weight bytes streamed per second over the read bandwidth (decode reads every weight once per
  // token and the K and V of every position it sees, the mean over its steps, which matters with
  // -d; a prompt reads the weights once per chunk of n_ubatch tokens).
  config_report finish() {
    config_report& r = report_;
    const model& md = *model_;
    const forward_pass& f = runner_->forward();
    r.facts.repacked_bytes = f.prepared_bytes();
    r.facts.repack_seconds = f.prepare_seconds();
    r.facts.one_token_steps = f.one_token_steps();
    r.facts.replayed_steps = f.replayed_steps();
    for (auto& t : r.tests) {
      if (!t.prompt_only() && !t.gen_only()) continue;  // a combined test has no one streaming rate
      const double reads_per_token =
          t.n_gen > 0 ? 1.0 : std::ceil(double(t.n_prompt) / r.n_ubatch) / double(t.n_prompt);
      double bytes = reads_per_token * double(r.facts.weight_bytes_per_token);
      if (t.n_gen > 0) {
        const int start = decode_start(t.n_depth);
        double kv = 0;
        for (int i = 0; i < t.n_gen; ++i) kv += double(kv_cache::bytes_read(md.profile, start + i + 1, dtype::f16));
        t.kv_bytes_per_token = uint64_t(kv / t.n_gen);
        bytes += double(t.kv_bytes_per_token);
      }
      t.bandwidth_fraction = t.avg_ts * bytes / r.bw.bytes_per_second;
      if (!t.between_bps.empty()) t.between_fraction = t.avg_ts * bytes / t.between_median_bps;
    }
    return r;
  }

  const config_report& report() const { return report_; }
  size_t n_tests() const { return report_.tests.size(); }

 private:
  config_run() = default;

  // Test t with n_gen generated tokens (the test's own, or fewer to warm up); nanoseconds.
  result<double> run(const test_result& t, int n_gen) {
    if (t.gen_only()) return runner_->generate(n_gen, t.n_depth);
    if (t.prompt_only()) return runner_->prompt(t.n_prompt, t.n_depth);
    return runner_->prompt_then_generate(t.n_prompt, n_gen, t.n_depth);
  }

  status between_pass(test_result& t) {
    if (!t.gen_only() || !probe_) return status::ok();
    auto bps = probe_->pass();
    if (!bps) return bps.take_error();
    t.between_bps.push_back(*bps);
    return status::ok();
  }

  // Declared in the order they are built (the runner uses the backend and the cache).
  std::shared_ptr<const model> model_;
  std::unique_ptr<backend> backend_;
  std::optional<cuda_device_facts> gpu_;
  bool gpu_named_ = true;
  read_probe* probe_ = nullptr;
  std::optional<kv_cache> cache_;
  std::optional<bench_runner> runner_;
  config_report report_;
};

std::string test_error(const config_spec& s, const test_result& t, const std::string& why) {
  return fmt::format("{} ({} threads, {}): {} test {}: {}", s.model_path, s.n_threads, s.cpu_isa,
                     t.gen_only() ? "generation" : "prompt", t.name(), why);
}

// The models a run needs, each loaded once and kept while a configuration uses it.
class model_cache {
 public:
  result<std::shared_ptr<const model>> get(const std::string& path, bool keep_others) {
    if (!keep_others) std::erase_if(models_, [&](const auto& m) { return m.first != path; });
    auto it = models_.find(path);
    if (it != models_.end()) return it->second;
    auto m = load_model(path);
    if (!m) return m.take_error();
    models_.emplace(path, *m);
    return *m;
  }

 private:
  std::map<std::string, std::shared_ptr<const model>> models_;
};

int run_bench(bench_options o) {
  const auto listed = test_list(o);
  if (!listed) {
    fmt::print(stderr, "error: {}\n", listed.message());
    return 1;
  }
  const std::vector<test_spec>& tests = *listed;
  if (tests.empty()) {
    fmt::print(stderr, "error: -p 0 and -n 0: nothing to measure\n");
    return 1;
  }
  const int all_cores = int(std::max(1u, std::thread::hardware_concurrency()));
  if (o.n_threads.empty()) o.n_threads = {0};
  std::vector<config_spec> specs;
  const std::vector<int> ubatches = o.n_ubatch.empty() ? std::vector<int>{0} : o.n_ubatch;
  for (const auto& m : o.models)
    for (int t : o.n_threads)
      for (const auto& isa : o.cpu_isa)
        for (int ub : ubatches) specs.push_back({m, t > 0 ? t : all_cores, isa, ub});

  const bench::table_printer printer(o.cpu_isa.size() > 1, !o.n_ubatch.empty());
  if (o.json) o.output = "json";
  const bool table = o.output == "md";
  // The header comes with the first row, so that a model that fails to load leaves stdout empty.
  bool header_printed = false;
  const auto print_row = [&](const config_report& c, const auto& t) {
    if (!table) return;
    if (!std::exchange(header_printed, true)) printer.header();
    printer.row(c, t);
  };
  probes pr(o.bandwidth_mib);
  model_cache models;
  std::vector<config_report> reports;
  // A failure keeps what finished: the table's rows are out already, the records of the finished
  // configurations are written (a later model that does not load loses only its own).
  const auto fail = [&](const std::string& why) {
    if (!table && !reports.empty()) fmt::print("{}", bench::format_records(bench::to_json(reports), o.output));
    fmt::print(stderr, "error: {}\n", why);
    return 1;
  };
  const auto open = [&](const config_spec& s) -> result<std::unique_ptr<config_run>> {
    auto m = models.get(s.model_path, o.interleave);
    if (!m) return m.take_error();
    if (!o.interleave) pr.keep_only(s.n_threads);
    return config_run::create(s, *m, o, tests, pr);
  };

  if (!o.interleave) {
    // llama-bench's way: one configuration after another, each loaded only while it runs.
    for (const auto& s : specs) {
      auto c = open(s);
      if (!c) return fail(c.message());
      config_run& run = **c;
      if (auto st = run.probe_ceiling(); !st) return fail(st.message());
      for (size_t i = 0; i < run.n_tests(); ++i) {
        status st = run.warm(i);
        for (int r = 0; st && r < o.reps; ++r) st = run.repetition(i);
        if (st) st = run.close(i);
        if (!st) return fail(test_error(s, run.report().tests[i], st.message()));
        print_row(run.report(), run.report().tests[i]);
      }
      if (auto st = run.probe_ceiling(); !st) return fail(st.message());
      reports.push_back(run.finish());
    }
  } else {
    // Rounds: every test of every configuration once per round (all of them loaded throughout).
    std::vector<std::unique_ptr<config_run>> runs;
    for (const auto& s : specs) {
      auto c = open(s);
      if (!c) return fail(c.message());
      runs.push_back(std::move(*c));
      if (auto st = runs.back()->probe_ceiling(); !st) return fail(st.message());
    }
    for (int r = 0; r < o.reps; ++r) {
      for (size_t k = 0; k < runs.size(); ++k)
        for (size_t i = 0; i < runs[k]->n_tests(); ++i) {
          status st = r == 0 ? runs[k]->warm(i) : status::ok();
          if (st) st = runs[k]->repetition(i);
          if (!st) return fail(test_error(specs[k], runs[k]->report().tests[i], st.message()));
        }
      fmt::print(stderr, "bench: round {}/{} of {} configurations done\n", r + 1, o.reps, runs.size());
    }
    for (size_t k = 0; k < runs.size(); ++k) {
      for (size_t i = 0; i < runs[k]->n_tests(); ++i)
        if (auto st = runs[k]->close(i); !st) return fail(test_error(specs[k], runs[k]->report().tests[i], st.message()));
      if (auto st = runs[k]->probe_ceiling(); !st) return fail(st.message());
      reports.push_back(runs[k]->finish());
      for (const auto& t : reports.back().tests) print_row(reports.back(), t);
    }
  }

  if (!table) {
    fmt::print("{}", bench::format_records(bench::to_json(reports), o.output));
  } else {
    for (const auto& c : reports) printer.notes(c, reports.size() > 1);
  }
  return 0;
}

}  // namespace

command_fn add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "measure prompt and generation speed (like llama-bench) against the memory bandwidth");
  auto o = std::make_shared<bench_options>();
  // Lists as llama-bench takes them: comma-separated, or the option repeated.
  const auto list = [](CLI::Option* opt) { return opt->delimiter(',')->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll); };
  list(cmd->add_option("-m,--model", o->models, "GGUF model file(s) or Hugging Face checkpoint folders"))->required()->check(CLI::ExistingPath);
  // Integer lists also take llama-bench's ranges: FIRST-LAST, FIRST-LAST+STEP, FIRST-LAST*MULT.
  const auto ints = [&](CLI::Option* opt) { return list(opt)->type_name("N[-LAST[+STEP|*MULT]],..."); };
  ints(cmd->add_option("-p,--n-prompt", o->n_prompt_text, "prompt tokens evaluated in one batch (0: skip)"))->capture_default_str();
  ints(cmd->add_option("-n,--n-gen", o->n_gen_text, "tokens generated one at a time (0: skip)"))->capture_default_str();
  ints(cmd->add_option("-d,--n-depth", o->n_depth_text, "tokens of context evaluated (not timed) before each test, as llama-bench's -d"))
      ->capture_default_str();
  ints(cmd->add_option("-t,--threads", o->n_threads_text, "threads (0, the default: one per core)"));
  ints(cmd->add_option("--ub,--ubatch-size,--ubatch", o->n_ubatch_text,
                       "prompt tokens per forward chunk (default: the largest prompt or depth, at most 512)"));
  cmd->add_option("--pg", o->pg, "PROMPT,GEN: a prompt then generated tokens, timed together (llama-bench's -pg; repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--backend", o->backend, "compute backend: auto (cuda when a GPU is present, else cpu), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  list(add_cpu_isa_option(cmd, o->cpu_isa));
  cmd->add_option("-r,--repetitions", o->reps, "timed repetitions of each test")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--bandwidth-mib", o->bandwidth_mib, "buffer of the bandwidth probe in MiB (keep it far above the LLC)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_flag("!--no-repack", o->repack, "compute from the file's weight layout (no repacking at load)");
  cmd->add_flag("--interleave", o->interleave,
                "run the repetitions in rounds over all configurations (all loaded at once), so that a noisy host slows "
                "them alike");
  cmd->add_option("-o,--output", o->output,
                  "md: the table and notes; json: a JSON array, one object per test (llama-bench's field names); jsonl: "
                  "one object per line; csv: one row per test")
      ->check(CLI::IsMember({"md", "json", "jsonl", "csv"}))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "the same as -o json")->excludes(cmd->get_option("--output"));
  return [o]() {
    if (status s = o->expand_lists(); !s) {
      fmt::print(stderr, "error: {}\n", s.message());
      return 1;
    }
    return run_bench(*o);
  };
}

}  // namespace glia::cli
