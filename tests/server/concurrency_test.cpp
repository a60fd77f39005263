// Many clients at once, clients that hang up, a full queue, and SIGTERM: every response complete and
// well-formed, greedy text the same alone or among others, and the server still serving afterwards.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <regex>
#include <thread>

#include <fmt/core.h>

#include "child_process.h"
#include "cli_runner.h"
#include "core/memory_info.h"
#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

double metric(const server_process& s, const std::string& name) {
  auto m = get(s, "/metrics");
  std::smatch match;
  std::regex re("\n" + name + " ([0-9.e+-]+)\n");
  if (!std::regex_search(m.body, match, re)) return -1;
  return std::stod(match[1]);
}

// Waits until metric `name` reaches `value` (true) or `timeout_ms` passes (false).
bool wait_metric(const server_process& s, const std::string& name, double value, int timeout_ms = 5000) {
  for (int i = 0; i < timeout_ms / 20; ++i) {
    if (metric(s, name) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string long_generation_body(bool stream) {
  return json{{"prompt", "The jury said"}, {"max_tokens", 1900}, {"temperature", 0}, {"stream", stream}}.dump();
}

TEST(ServerConcurrency, GreedyOutputsIndependentOfConcurrency) {
  server_process srv({"-m", test_model(), "--parallel", "8", "--metrics", "--prefill-chunk", "4"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const std::vector<std::string> prompts = {
      "The jury said", "She opened the door and", "It was a cold morning in the city", "The President said that",
      "In the morning the old man", "They walked to the river", "He wrote a letter to", "The church was",
      "After the war the", "The city council voted", "Her mother told her", "The game began when",
      "The jury said that the", "On Sunday the family", "The new school", "Most of the men"};
  std::vector<std::string> alone;
  for (const auto& p : prompts) alone.push_back(complete_greedy(srv, p, 24));
  // 16 streaming clients at once on 8 slots (the rest queue and join the running batch as slots free
  // up; prompts are prefilled 4 tokens a step among the others' decode steps), each checked against
  // its solo run.
  std::vector<std::future<stream_result>> futs;
  for (const auto& p : prompts)
    futs.push_back(std::async(std::launch::async, [&srv, p] {
      json req = {{"prompt", p}, {"max_tokens", 24}, {"temperature", 0}, {"stream", true}};
      return parse_stream(post(srv, "/v1/completions", req.dump()).body, false);
    }));
  for (size_t i = 0; i < prompts.size(); ++i) {
    stream_result r = futs[i].get();
    EXPECT_TRUE(r.done) << prompts[i];
    EXPECT_TRUE(r.well_formed) << prompts[i];
    EXPECT_EQ(r.finish_reason, "length");
    EXPECT_EQ(r.text, alone[i]) << prompts[i];
  }
  EXPECT_TRUE(wait_metric(srv, "glia_slots_busy", 0));
  EXPECT_TRUE(srv.alive());
}

TEST(ServerConcurrency, DisconnectCancelsGeneration) {
  server_process srv({"-m", test_model(), "-c", "2048", "--metrics"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  // Streaming: read the first event, then hang up.
  int fd = send_raw(srv, post_request("/v1/completions", long_generation_body(true)));
  ASSERT_GE(fd, 0);
  char buf[4096];
  std::string got;
  while (got.find("data: ") == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof buf);
    ASSERT_GT(n, 0);
    got.append(buf, size_t(n));
  }
  close(fd);
  EXPECT_TRUE(wait_metric(srv, "glia_requests_cancelled_total", 1)) << srv.log();
  EXPECT_TRUE(wait_metric(srv, "glia_slots_busy", 0));
  // Not streaming: hang up while it generates.
  fd = send_raw(srv, post_request("/v1/completions", long_generation_body(false)));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(wait_metric(srv, "glia_slots_busy", 1));
  close(fd);
  EXPECT_TRUE(wait_metric(srv, "glia_requests_cancelled_total", 2)) << srv.log();
  EXPECT_TRUE(wait_metric(srv, "glia_slots_busy", 0));
  // Garbage on the wire gets an error or a closed connection, and the server keeps serving.
  fd = send_raw(srv, "NOT-HTTP \x01\x02\r\n\r\n");
  if (fd >= 0) close(fd);
  fd = send_raw(srv, "POST /v1/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"prompt\"");  // short body
  if (fd >= 0) close(fd);
  EXPECT_EQ(complete_greedy(srv, "The jury said", 4).substr(0, 4), " the");
}

TEST(ServerConcurrency, FullQueueGets503) {
  server_process srv({"-m", test_model(), "-c", "2048", "--parallel", "1", "--max-queue", "0", "--metrics"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  int fd = send_raw(srv, post_request("/v1/completions", long_generation_body(true)));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(wait_metric(srv, "glia_slots_busy", 1));
  auto r = post(srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 1}});
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.headers.count("Retry-After"), 1u);
  EXPECT_EQ(r.json()["error"]["type"], "server_busy");
  close(fd);
  EXPECT_TRUE(wait_metric(srv, "glia_slots_busy", 0));
  EXPECT_EQ(post(srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 1}}).status, 200);
  // More choices than a slot and an empty queue could ever hold are taken when nothing else waits.
  auto many = post(srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 1}, {"n", 3}});
  ASSERT_EQ(many.status, 200) << many.body;
  EXPECT_EQ(many.json()["choices"].size(), 3u);
}

TEST(ServerConcurrency, AbandonedQueuedRequestsGiveBackTheirPlace) {
  // One slot busy, one queue place: a client that gives up while it waits must free that place at
  // once, not when the running generation ends (clients that time out and retry would otherwise fill
  // the queue, and every live request get 503).
  server_process srv({"-m", test_model(), "-c", "16384", "--parallel", "1", "--max-queue", "1", "--metrics"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  // Long enough to outlast every step below on a loaded machine; cancelled by hanging up at the end.
  const std::string longest = json{{"prompt", "The jury said"}, {"max_tokens", 16000}, {"temperature", 0}, {"stream", true}}.dump();
  const int running = send_raw(srv, post_request("/v1/completions", longest));
  ASSERT_GE(running, 0);
  ASSERT_TRUE(wait_metric(srv, "glia_slots_busy", 1));
  double cancelled = 0;
  for (bool stream : {false, true}) {
    const int fd = send_raw(srv, post_request("/v1/completions", json{{"prompt", "Queued"}, {"max_tokens", 4}, {"stream", stream}}.dump()));
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(wait_metric(srv, "glia_queue_length", 1)) << stream;
    // A request's choices queue together or not at all: with one waiting, none of these two does.
    EXPECT_EQ(post(srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 1}, {"n", 2}}).status, 503);
    EXPECT_EQ(metric(srv, "glia_queue_length"), 1);
    close(fd);
    EXPECT_TRUE(wait_metric(srv, "glia_queue_length", 0)) << stream;
    EXPECT_TRUE(wait_metric(srv, "glia_requests_cancelled_total", ++cancelled)) << stream;
    EXPECT_EQ(metric(srv, "glia_slots_busy"), 1) << "the running generation goes on";
  }
  // A request of several choices that gives up counts once.
  {
    const int fd = send_raw(srv, post_request("/v1/completions", json{{"prompt", "Queued"}, {"max_tokens", 4}, {"n", 3}}.dump()));
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(wait_metric(srv, "glia_queue_length", 3));  // more than the queue holds: taken, since none waited
    close(fd);
    EXPECT_TRUE(wait_metric(srv, "glia_queue_length", 0));
    EXPECT_TRUE(wait_metric(srv, "glia_requests_cancelled_total", ++cancelled));
  }
  // The freed place takes a live request, which runs once the slot frees.
  auto live = std::async(std::launch::async, [&srv] { return post(srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 1}}); });
  ASSERT_TRUE(wait_metric(srv, "glia_queue_length", 1));
  close(running);
  EXPECT_EQ(live.get().status, 200);
}

TEST(ServerLifecycle, SecondServerOnABusyPortIsRefused) {
  // Two listeners on one port would split the connections between them (possibly two different
  // models) without either noticing.
  server_process first({"-m", test_model()});
  ASSERT_NE(first.port(), 0) << first.log();
  child_process second({GLIA_CLI, "serve", "-m", test_model(), "-t", "1", "--host", first.host(), "--port", std::to_string(first.port())});
  second.pump(20000, "cannot listen", "");
  EXPECT_EQ(second.wait_exit(20000), 1) << second.err;
  EXPECT_NE(second.err.find("cannot listen"), std::string::npos) << second.err;
  EXPECT_EQ(complete_greedy(first, "The jury said", 4).substr(0, 4), " the");
}

TEST(ServerLifecycle, KvCachesOfEverySlotMustFitInMemory) {
  // Each slot has a KV cache of -c tokens. 256 slots whose caches take a 64th of the available
  // memory each need 4 times what there is, and must be refused before anything is allocated (the
  // server used to check one cache only, start, and be killed once its slots filled).
  const auto info = run_glia({"info", "-m", test_model(), "-c", "1000000"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(info.out, m, std::regex("KV cache ([0-9.]+) GiB \\(1000000 tokens"))) << info.out << info.err;
  const double per_token = std::stod(m[1]) * double(1 << 30) / 1e6;
  const auto available = available_memory_bytes();
  if (!available) GTEST_SKIP() << "this system does not say how much memory is available";
  const long long n_ctx = std::min(16777216LL, (long long)(double(*available) / 64 / per_token));
  if (256 * double(n_ctx) * per_token < 2 * double(*available)) GTEST_SKIP() << "the largest context fits 256 times";
  child_process serve({GLIA_CLI, "serve", "-m", test_model(), "-t", "1", "--port", "0", "-c", std::to_string(n_ctx), "--parallel", "256"});
  EXPECT_EQ(serve.wait_exit(60000), 1) << serve.err;
  EXPECT_NE(serve.err.find(fmt::format("the KV caches of 256 sequences (parallel slots) with a context of {} tokens each", n_ctx)),
            std::string::npos)
      << serve.err;
  EXPECT_NE(serve.err.find("fewer slots"), std::string::npos) << serve.err;
}

TEST(ServerLifecycle, SigtermDrainsRunningStream) {
  // A generation long enough to be seen busy between two polls: 1,900 tokens, where the model's own
  // context (256) would end it within ~20 ms.
  // Draining lets it finish all 1,900 tokens (under an emulator at ~30 t/s, more than the default
  // 60 s allows).
  const int drain_s = test::emulated ? 300 : 20;
  server_process srv({"-m", test_model(), "-c", "2048", "--metrics", "--drain-seconds", std::to_string(drain_s)});
  ASSERT_NE(srv.port(), 0) << srv.log();
  auto fut = std::async(std::launch::async,
                        [&srv] { return parse_stream(post(srv, "/v1/completions", long_generation_body(true)).body, false); });
  ASSERT_TRUE(wait_metric(srv, "glia_slots_busy", 1));
  // While it drains, /health says so (load balancers stop sending) and new generations get 503.
  ASSERT_EQ(kill(srv.pid(), SIGTERM), 0);
  bool health_503 = false;
  for (int i = 0; i < 100 && !health_503; ++i) {
    health_503 = get(srv, "/health").status == 503;
    if (!health_503) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(health_503);
  EXPECT_EQ(post(srv, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 1}}).status, 503);
  EXPECT_EQ(srv.terminate(drain_s), 0) << srv.log();
  stream_result r = fut.get();
  EXPECT_TRUE(r.done);
  EXPECT_TRUE(r.well_formed);
  EXPECT_FALSE(r.text.empty());
}

TEST(ServerLifecycle, DrainDeadlineEndsWhatStillRuns) {
  // A generation far longer than the one second of draining allowed, and a request queued behind it.
  server_process srv({"-m", test_model(), "-c", "16384", "--metrics", "--drain-seconds", "1"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const json body = {{"prompt", "The jury said"}, {"max_tokens", 16000}, {"ignore_eos", true}, {"temperature", 0}};
  json streamed = body;
  streamed["stream"] = true;
  auto running = std::async(std::launch::async, [&] { return post(srv, "/v1/completions", streamed); });
  ASSERT_TRUE(wait_metric(srv, "glia_slots_busy", 1));
  auto queued = std::async(std::launch::async, [&] { return post(srv, "/v1/completions", body); });
  ASSERT_TRUE(wait_metric(srv, "glia_queue_length", 1));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(srv.pid(), SIGTERM), 0);
  EXPECT_EQ(srv.terminate(60), 0) << srv.log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(test::emulated ? 60 : 10));
  // The stream ends properly, with the error that says why; the queued request is refused.
  const http_reply r = running.get();
  const stream_result sr = parse_stream(r.body, false);
  EXPECT_TRUE(sr.done) << r.body.substr(r.body.size() > 300 ? r.body.size() - 300 : 0);
  EXPECT_NE(r.body.find("shutting down"), std::string::npos);
  const http_reply q = queued.get();
  EXPECT_EQ(q.status, 503) << q.body;
}

// A client sending its body a byte at a time (each byte restarts the read timeout) and an idle
// keep-alive connection do not hold a stopping server: it exits within the drain time and a second.
TEST(ServerLifecycle, SlowAndIdleClientsDoNotHoldAStop) {
  server_process srv({"-m", test_model(), "--drain-seconds", "1"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const int slow = send_raw(srv, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n{\"prompt\":\"");
  ASSERT_GE(slow, 0);
  const int idle = send_raw(srv, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_GE(idle, 0);
  char buf[512];
  ASSERT_GT(recv(idle, buf, sizeof buf, 0), 0);  // answered; the connection stays open
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop && send(slow, "x", 1, MSG_NOSIGNAL) == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(srv.terminate(30), 0) << srv.log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(test::emulated ? 30 : 5));
  stop = true;
  trickle.join();
  close(slow);
  close(idle);
}

TEST(ServerLifecycle, DrainDeadlineEndsMessagesAndResponsesStreamsInTheirShapes) {
  server_process srv({"-m", test_model(), "-c", "16384", "--metrics", "--drain-seconds", "1"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const json messages = {{{"role", "user"}, {"content", "The jury said"}}};
  auto running = std::async(std::launch::async, [&] {
    return post(srv, "/v1/messages", json{{"max_tokens", 16000}, {"ignore_eos", true}, {"stream", true}, {"messages", messages}});
  });
  ASSERT_TRUE(wait_metric(srv, "glia_slots_busy", 1));
  auto queued = std::async(std::launch::async, [&] {
    return post(srv, "/v1/responses", json{{"max_output_tokens", 16000}, {"ignore_eos", true}, {"stream", true}, {"input", "The jury said"}});
  });
  ASSERT_TRUE(wait_metric(srv, "glia_queue_length", 1));
  ASSERT_EQ(kill(srv.pid(), SIGTERM), 0);
  EXPECT_EQ(srv.terminate(60), 0) << srv.log();
  // Anthropic's stream: its open block closed, then an error event with the reason.
  const std::string m = running.get().body;
  EXPECT_NE(m.find("event: content_block_stop"), std::string::npos);
  const size_t error_at = m.rfind("event: error\ndata: ");
  ASSERT_NE(error_at, std::string::npos) << m.substr(m.size() > 400 ? m.size() - 400 : 0);
  EXPECT_NE(m.find("shutting down", error_at), std::string::npos);
  // The Responses API's: an error event, then response.failed, the terminal event.
  const std::string r = queued.get().body;
  EXPECT_NE(r.find("event: response.created"), std::string::npos) << r;
  EXPECT_NE(r.find("event: error"), std::string::npos) << r;
  const size_t failed_at = r.rfind("event: response.failed");
  ASSERT_NE(failed_at, std::string::npos) << r;
  EXPECT_NE(r.find("shutting down", failed_at), std::string::npos) << r;
}

}  // namespace
}  // namespace glia::test
