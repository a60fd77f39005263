#include "server/metrics.h"

#include <fmt/core.h>

namespace glia::server {
namespace {

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string metrics::render(const gauges& g) const {
  std::string o;
  family(o, "glia_requests_total", "counter", "Requests received, by endpoint.");
  o += fmt::format("glia_requests_total{{endpoint=\"chat\"}} {}\n", requests_chat.load());
  o += fmt::format("glia_requests_total{{endpoint=\"completions\"}} {}\n", requests_completion.load());
  o += fmt::format("glia_requests_total{{endpoint=\"messages\"}} {}\n", requests_messages.load());
  o += fmt::format("glia_requests_total{{endpoint=\"responses\"}} {}\n", requests_responses.load());
  o += fmt::format("glia_requests_total{{endpoint=\"other\"}} {}\n", requests_other.load());
  family(o, "glia_responses_errors_total", "counter", "Error responses, by class.");
  o += fmt::format("glia_responses_errors_total{{class=\"4xx\"}} {}\n", responses_4xx.load());
  o += fmt::format("glia_responses_errors_total{{class=\"5xx\"}} {}\n", responses_5xx.load());
  family(o, "glia_requests_rejected_total", "counter", "Requests refused because the queue was full.");
  o += fmt::format("glia_requests_rejected_total {}\n", rejected_queue_full.load());
  family(o, "glia_requests_cancelled_total", "counter", "Requests cancelled by a client disconnect (queued or generating).");
  o += fmt::format("glia_requests_cancelled_total {}\n", cancelled.load());
  family(o, "glia_prompt_tokens_total", "counter", "Prompt tokens evaluated (reused prefixes excluded).");
  o += fmt::format("glia_prompt_tokens_total {}\n", prompt_tokens.load());
  family(o, "glia_generated_tokens_total", "counter", "Tokens generated.");
  o += fmt::format("glia_generated_tokens_total {}\n", generated_tokens.load());
  const double pre_s = double(prefill_us.load()) * 1e-6, dec_s = double(decode_us.load()) * 1e-6;
  family(o, "glia_prefill_tokens_per_second", "gauge", "Prompt tokens per second of prefill time, since start.");
  o += fmt::format("glia_prefill_tokens_per_second {:.3f}\n", pre_s > 0 ? double(prompt_tokens.load()) / pre_s : 0.0);
  family(o, "glia_decode_tokens_per_second", "gauge", "Generated tokens per second of decode time, since start.");
  o += fmt::format("glia_decode_tokens_per_second {:.3f}\n", dec_s > 0 ? double(generated_tokens.load()) / dec_s : 0.0);
  family(o, "glia_queue_length", "gauge", "Requests waiting for a slot.");
  o += fmt::format("glia_queue_length {}\n", g.queue_length);
  family(o, "glia_slots_busy", "gauge", "Slots generating.");
  o += fmt::format("glia_slots_busy {}\n", g.busy_slots);
  family(o, "glia_slots", "gauge", "Slots (--parallel).");
  o += fmt::format("glia_slots {}\n", g.n_slots);
  family(o, "glia_kv_cache_tokens", "gauge", "Tokens held in the KV caches.");
  o += fmt::format("glia_kv_cache_tokens {}\n", g.kv_used_tokens);
  family(o, "glia_kv_cache_capacity_tokens", "gauge", "Tokens the KV caches can hold.");
  o += fmt::format("glia_kv_cache_capacity_tokens {}\n", g.kv_capacity_tokens);
  family(o, "glia_kv_cache_usage_ratio", "gauge", "Fraction of the KV caches in use.");
  o += fmt::format("glia_kv_cache_usage_ratio {:.6f}\n",
                   g.kv_capacity_tokens > 0 ? double(g.kv_used_tokens) / double(g.kv_capacity_tokens) : 0.0);
  return o;
}

}  // namespace glia::server
