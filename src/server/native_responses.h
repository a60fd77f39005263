// llama-server's own response shapes (POST /completion, /infill; GET /props): a result with
// "content", "stop", "stop_type" (eos, word, limit), "tokens_predicted", "tokens_evaluated",
// "generation_settings", "timings" and, with n_probs, "completion_probabilities"; streamed as
// "data: {...}" events of content pieces, the last one the whole result with empty content (no
// [DONE], as llama-server ends its own streams).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/job.h"
#include "server/request.h"

namespace glia::server {

// What a result shows beside its job (whose params and prompt give the rest: n_probs is
// top_logprobs, post_sampling_probs the kind of probabilities).
struct native_meta {
  std::string model;
  std::string prompt_text;  // the prompt's tokens as text (special tokens shown)
  bool return_tokens = false;
  std::vector<std::string> response_fields;  // only these, by path ("timings/prompt_n"); empty: all
};

// llama-server's generation_settings (and /props' default params) for these parameters.
nlohmann::ordered_json native_settings(const generation_params& p);

// A finished job's result: `index` among the request's prompts, its content and token logprobs
// (probabilities: with n_probs, completion_probabilities from them; the stream's last event has none).
nlohmann::ordered_json native_result(const native_meta& m, const job& j, int index, const std::string& content,
                                     const std::vector<token_logprob>& lps, bool probabilities = true);

// The result stream's events (a Writer for sse_job_stream): a piece per event, then the result.
class native_stream {
 public:
  explicit native_stream(native_meta m) : m_(std::move(m)) {}
  std::optional<std::string> start(const job& j, bool) {
    params_ = &j.params;  // read-only once the job is queued
    n_prompt_ = int(j.prompt.size());
    return std::string();
  }
  std::string push_event(const gen_event& e);
  std::string finish(const job& j);
  std::string error(const api_error& e);
  std::string keep_alive();

 private:
  native_meta m_;
  const generation_params* params_ = nullptr;
  int n_prompt_ = 0;
  int n_tokens_ = 0;
};

}  // namespace glia::server
