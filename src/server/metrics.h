// Counters and gauges for GET /metrics, in the Prometheus text exposition format (version 0.0.4).
// Counters are atomics bumped by the HTTP and engine threads; gauges are read when scraped.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace glia::server {

struct gauges {
  int queue_length = 0;
  int busy_slots = 0;
  int n_slots = 0;
  int64_t kv_used_tokens = 0;      // tokens held in the slots' KV caches
  int64_t kv_capacity_tokens = 0;  // all slots' context sizes together
};

struct metrics {
  std::atomic<uint64_t> requests_chat{0};
  std::atomic<uint64_t> requests_completion{0};
  std::atomic<uint64_t> requests_messages{0};  // Anthropic's /v1/messages
  std::atomic<uint64_t> requests_responses{0};  // OpenAI's /v1/responses
  std::atomic<uint64_t> requests_other{0};
  std::atomic<uint64_t> responses_4xx{0};
  std::atomic<uint64_t> responses_5xx{0};
  std::atomic<uint64_t> rejected_queue_full{0};
  std::atomic<uint64_t> cancelled{0};
  std::atomic<uint64_t> prompt_tokens{0};     // evaluated (reused prefixes are not counted)
  std::atomic<uint64_t> generated_tokens{0};
  std::atomic<uint64_t> prefill_us{0};        // engine time spent on prompts
  std::atomic<uint64_t> decode_us{0};         // engine time spent on decode steps

  std::string render(const gauges& g) const;
};

}  // namespace glia::server
