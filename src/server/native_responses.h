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

// What every result of a request repeats.
struct native_meta {
  std::string model;
  std::string prompt_text;  // the prompt's tokens as text (special tokens shown)
  int n_prompt = 0;
  int n_probs = 0;
  bool post_sampling = false;  // probabilities ("prob", "top_probs") among the sampler's candidates
  bool return_tokens = false;
  std::vector<std::string> response_fields;  // only these, by path ("timings/prompt_n"); empty: all
  nlohmann::ordered_json settings;           // native_settings of the request
};

// llama-server's generation_settings (and /props' default params) for these parameters.
nlohmann::ordered_json native_settings(const generation_params& p, int n_probs);

// A finished job's result: `index` among the request's prompts, its content and token logprobs
// (probabilities: with n_probs, completion_probabilities from them; the stream's last event has none).
nlohmann::ordered_json native_result(const native_meta& m, const job& j, int index, const std::string& content,
                                     const std::vector<token_logprob>& lps, bool probabilities = true);

// The result stream's events (a Writer for sse_job_stream): a piece per event, then the result.
class native_stream {
 public:
  explicit native_stream(native_meta m) : m_(std::move(m)) {}
  std::optional<std::string> start(const job&, bool) { return std::string(); }
  std::string push_event(const gen_event& e);
  std::string finish(const job& j);
  std::string error(const api_error& e);
  std::string keep_alive();

 private:
  native_meta m_;
  int n_tokens_ = 0;
};

}  // namespace glia::server
