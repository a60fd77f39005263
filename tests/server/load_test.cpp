// The load test: 32 streaming clients at once, three rounds, on loopback. Every response must be
// complete and well-formed, every stream its own (one id per stream, no id shared between streams),
// every greedy text equal to the same request made alone, and the server alive afterwards with its
// resident memory flat from the first round to the last (no per-request leak).
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <set>

#include "http_helpers.h"
#include "test_support.h"

namespace glia::test {
namespace {

using nlohmann::json;

constexpr int n_clients = 32;
constexpr int n_rounds = 3;
constexpr int max_tokens = 16;

// Defined by the AddressSanitizer runtime, which sanitized builds link into every executable.
extern "C" void __asan_init() __attribute__((weak));  // NOLINT(bugprone-reserved-identifier)
bool sanitized_build() { return &__asan_init != nullptr; }

// Resident set size of a process in KiB (VmRSS), -1 if unreadable.
long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      long kib = -1;
      in >> kib;
      return kib;
    }
    in.ignore(1 << 20, '\n');
  }
  return -1;
}

struct client_request {
  bool chat;
  std::string path;
  json body;
};

// Half chat requests (the fallback ChatML template), half plain completions; all greedy, usage on.
std::vector<client_request> make_requests() {
  const char* starts[] = {"The jury said", "She opened the door", "It was a cold morning", "The President said",
                          "In the morning the old man", "They walked to the river", "He wrote a letter to",
                          "The church was", "After the war", "The city council voted", "Her mother told her",
                          "The game began when", "On Sunday the family", "The new school", "Most of the men",
                          "The committee found that"};
  std::vector<client_request> out;
  for (int i = 0; i < n_clients; ++i) {
    const bool chat = i % 2 == 1;
    const std::string text = std::string(starts[i % 16]) + (i >= 16 ? " again" : "");
    json body = {{"max_tokens", max_tokens}, {"temperature", 0}};
    if (chat)
      body["messages"] = json::array({{{"role", "user"}, {"content", text}}});
    else
      body["prompt"] = text;
    out.push_back({chat, chat ? "/v1/chat/completions" : "/v1/completions", body});
  }
  return out;
}

std::string solo_text(const server_process& srv, const client_request& c) {
  auto r = post(srv, c.path, c.body);
  auto j = r.json();
  if (r.status != 200 || j.is_discarded()) return "<error " + std::to_string(r.status) + ">";
  const auto& choice = j["choices"][0];
  return c.chat ? choice["message"]["content"].get<std::string>() : choice["text"].get<std::string>();
}

TEST(ServerLoad, ThirtyTwoStreamingClientsThreeRounds) {
  server_process srv({"-m", test_model(), "--parallel", "16", "-c", "4096", "--prefill-chunk", "8", "--metrics"});
  ASSERT_NE(srv.port(), 0) << srv.log();
  const std::vector<client_request> requests = make_requests();
  std::vector<std::string> alone;
  for (const auto& c : requests) alone.push_back(solo_text(srv, c));

  long rss_after_first = -1;
  for (int round = 0; round < n_rounds; ++round) {
    std::vector<std::future<stream_result>> futs;
    for (const auto& c : requests)
      futs.push_back(std::async(std::launch::async, [&srv, c] {
        json body = c.body;
        body["stream"] = true;
        body["stream_options"] = {{"include_usage", true}};
        return parse_stream(post(srv, c.path, body.dump()).body, c.chat);
      }));
    std::set<std::string> ids;
    for (int i = 0; i < n_clients; ++i) {
      const stream_result r = futs[size_t(i)].get();
      SCOPED_TRACE("round " + std::to_string(round) + ", client " + std::to_string(i));
      EXPECT_TRUE(r.done);
      EXPECT_TRUE(r.well_formed);
      ASSERT_FALSE(r.chunks.empty());
      ids.insert(r.chunks.front().value("id", ""));
      EXPECT_EQ(r.text, alone[size_t(i)]);
      EXPECT_TRUE(r.finish_reason == "length" || r.finish_reason == "stop") << r.finish_reason;
      ASSERT_TRUE(r.usage.is_object());
      EXPECT_LE(r.usage["completion_tokens"].get<int>(), max_tokens);
      if (r.finish_reason == "length") {
        EXPECT_EQ(r.usage["completion_tokens"].get<int>(), max_tokens);
      }
    }
    EXPECT_EQ(ids.size(), size_t(n_clients)) << "two streams shared an id";
    ASSERT_TRUE(srv.alive()) << srv.log();
    if (round == 0) rss_after_first = rss_kib(srv.pid());
  }
  const long rss_after_last = rss_kib(srv.pid());
  ASSERT_GT(rss_after_first, 0);
  // Two more rounds of 32 requests may not grow the server: allocator noise stays under 4 MiB, which
  // a leak of some 64 KiB per request (a response buffer, a per-request KV copy) would pass. Under
  // AddressSanitizer the quarantine keeps freed memory resident by design (it grew ~230 MiB here), so
  // there the leak checker at exit stands in: a leak makes the drained exit below fail.
  if (!sanitized_build()) {
    EXPECT_LT(rss_after_last - rss_after_first, 4096) << "RSS " << rss_after_first << " -> " << rss_after_last << " KiB";
  }
  // Still serving, and it drains and exits cleanly.
  EXPECT_EQ(solo_text(srv, requests[0]), alone[0]);
  EXPECT_EQ(srv.terminate(), 0) << srv.log();
}

}  // namespace
}  // namespace glia::test
