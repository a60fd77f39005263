// glia-bench-server: aggregate generation throughput of a running OpenAI-compatible server at a
// rising number of concurrent streams (what continuous batching is for: one pass over the weights
// serves every active stream, so the aggregate should grow with the streams while one stream's
// rate falls only a little).
//
//   glia-bench-server --port PORT [--host H] [--streams 1,4,8,16] [-n 128] [--prompt-words 24]
//                     [--api-key KEY] [--json]
//
// For each stream count N, N clients start together (a barrier), each streaming a greedy
// /v1/completions of its own prompt with stream_options.include_usage. Reported per N:
//  - tokens: completion tokens of all streams (from usage);
//  - aggregate t/s: those tokens over the wall time from the first request to the last [DONE]
//    (prefill included);
//  - decode t/s: events received while every stream was decoding (from the last stream's first
//    token to the first stream's last token) over that window's length: the batched decode rate with
//    all N streams in the batch (one event is one token when no stop string holds text back);
//  - per stream t/s: mean over streams of (events - 1) / (last - first event time);
//  - TTFT: mean time to the first token.
// bench/server.sh starts `glia serve` on a synthesized TinyLlama-geometry model and runs this.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

struct options {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::vector<int> streams = {1, 4, 8, 16};
  int n_gen = 128;
  int prompt_words = 24;
  std::string api_key;
  bool json_out = false;
};

struct stream_record {
  bool ok = false;
  std::string error;
  int completion_tokens = 0;
  std::vector<double> event_s;  // arrival of each token event, seconds after the round's start
  double done_s = 0;
};

// A distinct prompt per stream (no shared prefix beyond the first word, so no prefix reuse between
// streams makes one prefill cheaper than another).
std::string prompt_for(int stream, int words) {
  static const char* vocab[] = {"river", "stone", "market", "letter", "window", "garden", "teacher", "winter",
                                "journey", "island", "engine", "silver", "harbor", "forest", "candle", "valley"};
  std::string p = "Story " + std::to_string(stream) + ":";
  uint32_t x = 2654435761u * uint32_t(stream + 1);
  for (int i = 0; i < words; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p += ' ';
    p += vocab[x % 16];
  }
  return p;
}

void run_stream(const options& o, int index, clock_type::time_point t0, std::barrier<>& start, stream_record& rec) {
  httplib::Client cli(o.host, o.port);
  cli.set_read_timeout(600, 0);
  json body = {{"prompt", prompt_for(index, o.prompt_words)},
               {"max_tokens", o.n_gen},
               {"temperature", 0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  if (!o.api_key.empty()) req.set_header("Authorization", "Bearer " + o.api_key);
  std::string pending;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const double now = std::chrono::duration<double>(clock_type::now() - t0).count();
    pending.append(data, n);
    for (size_t end; (end = pending.find("\n\n")) != std::string::npos; pending.erase(0, end + 2)) {
      const std::string ev = pending.substr(0, end);
      if (ev.rfind("data: ", 0) != 0) continue;
      const std::string payload = ev.substr(6);
      if (payload == "[DONE]") {
        rec.done_s = now;
        rec.ok = true;
        continue;
      }
      const json j = json::parse(payload, nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("usage") && j["usage"].is_object()) rec.completion_tokens = j["usage"].value("completion_tokens", 0);
      if (j.contains("choices") && !j["choices"].empty() && !j["choices"][0].value("text", "").empty())
        rec.event_s.push_back(now);
    }
    return true;
  };
  start.arrive_and_wait();
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  if (!cli.send(req, res, err)) {
    rec.ok = false;
    rec.error = "request failed: " + httplib::to_string(err);
  } else if (res.status != 200) {
    rec.ok = false;
    rec.error = "HTTP " + std::to_string(res.status);
  }
}

struct round_result {
  int streams = 0;
  int tokens = 0;
  double wall_s = 0;
  double aggregate_ts = 0;
  double decode_ts = 0;
  double per_stream_ts = 0;
  double ttft_ms = 0;
};

round_result run_round(const options& o, int n) {
  std::vector<stream_record> recs(static_cast<size_t>(n));
  std::barrier start(n + 1);
  const auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { run_stream(o, i, t0, start, recs[size_t(i)]); });
  start.arrive_and_wait();
  const auto t_begin = clock_type::now();
  for (auto& t : threads) t.join();
  const double begin_s = std::chrono::duration<double>(t_begin - t0).count();

  round_result r;
  r.streams = n;
  double last_first = 0, first_last = 1e300, end_s = 0;
  for (const auto& rec : recs) {
    if (!rec.ok || rec.event_s.empty()) throw std::runtime_error("a stream failed: " + (rec.error.empty() ? "no tokens" : rec.error));
    r.tokens += rec.completion_tokens;
    last_first = std::max(last_first, rec.event_s.front());
    first_last = std::min(first_last, rec.event_s.back());
    end_s = std::max(end_s, rec.done_s);
    r.ttft_ms += (rec.event_s.front() - begin_s) * 1e3 / n;
    if (rec.event_s.size() > 1)
      r.per_stream_ts += double(rec.event_s.size() - 1) / (rec.event_s.back() - rec.event_s.front()) / n;
  }
  r.wall_s = end_s - begin_s;
  r.aggregate_ts = r.tokens / r.wall_s;
  if (first_last > last_first) {
    long in_window = 0;
    for (const auto& rec : recs)
      for (double t : rec.event_s) in_window += t > last_first && t <= first_last;
    r.decode_ts = double(in_window) / (first_last - last_first);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"Aggregate generation throughput of a running glia (or any OpenAI-compatible) server"};
  app.add_option("--host", o.host, "server address")->capture_default_str();
  app.add_option("--port", o.port, "server port")->required();
  app.add_option("--streams", o.streams, "concurrent stream counts to measure")->delimiter(',')->capture_default_str();
  app.add_option("-n,--n-gen", o.n_gen, "tokens generated per stream")->check(CLI::Range(2, 1 << 20))->capture_default_str();
  app.add_option("--prompt-words", o.prompt_words, "words per prompt")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--api-key", o.api_key, "Bearer key, if the server wants one");
  app.add_flag("--json", o.json_out, "print a JSON array instead of a table");
  CLI11_PARSE(app, argc, argv);

  try {
    run_round(o, 1);  // warm-up: page in the weights, start the server's threads
    std::vector<round_result> results;
    for (int n : o.streams) results.push_back(run_round(o, n));
    const double base = results.front().decode_ts;
    if (o.json_out) {
      json out = json::array();
      for (const auto& r : results)
        out.push_back({{"streams", r.streams}, {"n_gen", o.n_gen}, {"tokens", r.tokens}, {"wall_s", r.wall_s},
                       {"aggregate_ts", r.aggregate_ts}, {"decode_ts", r.decode_ts},
                       {"per_stream_ts", r.per_stream_ts}, {"ttft_ms", r.ttft_ms}});
      fmt::print("{}\n", out.dump(2));
      return 0;
    }
    fmt::print("| streams | tokens | wall s | aggregate t/s | decode t/s | vs first | per stream t/s | TTFT ms |\n");
    fmt::print("| ------: | -----: | -----: | ------------: | ---------: | -------: | -------------: | ------: |\n");
    for (const auto& r : results)
      fmt::print("| {:7} | {:6} | {:6.2f} | {:13.2f} | {:10.2f} | {:7.2f}x | {:14.2f} | {:7.0f} |\n", r.streams, r.tokens,
                 r.wall_s, r.aggregate_ts, r.decode_ts, base > 0 ? r.decode_ts / base : 0.0, r.per_stream_ts,
                 r.ttft_ms);
  } catch (const std::exception& e) {
    fmt::print(stderr, "glia-bench-server: {}\n", e.what());
    return 1;
  }
  return 0;
}
