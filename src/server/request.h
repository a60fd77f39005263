// A validated /v1/chat/completions or /v1/completions request. Parsing is total: any body gives
// either a request or an api_error (400) naming the field, the value and the limit; nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampler/params.h"
#include "server/api_error.h"
#include "server/tool_request.h"

namespace glia::server {

struct generation_params {
  sampler_params sampling;
  bool seed_given = false;
  int max_tokens = -1;  // -1: until an end-of-generation token or a full context
  std::vector<std::string> stop;
  bool logprobs = false;
  int top_logprobs = 0;  // alternatives per token (chat: 0..20, completions: 0..5)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  bool ignore_eos = false;     // llama-server's and vLLM's: end-of-generation tokens are never sampled
  bool echo = false;           // completions: the prompt comes back before the reply (with its tokens' logprobs)
  // llama-server's post_sampling_probs: a token's logprobs from the candidates the sampler's chain
  // left (penalties, truncation, temperature applied) instead of the model's whole distribution.
  bool post_sampling_probs = false;
  std::vector<std::string> shown_control_tokens;  // markers a reply is read by (see session::make_text_stream)
};

struct completion_request {
  bool chat = false;
  std::string model;
  nlohmann::ordered_json messages;   // chat: [{"role", "content": string, ...}] normalized for the template
  tool_options tools;                // chat: tools, tool_choice, parallel_tool_calls
  nlohmann::json template_kwargs = nlohmann::json::object();  // chat: chat_template_kwargs (enable_thinking, ...)
  bool add_generation_prompt = true;
  bool continue_final_message = false;  // the reply continues the last (assistant) message: a prefill
  std::optional<bool> split_reasoning;  // llama-server's reasoning_format: the server's choice when unset
  // Tokens the reasoning may take before it is closed (thinking_budget_tokens, thinking_token_budget;
  // -1: no limit): the server's --reasoning-budget when unset.
  std::optional<int> reasoning_budget;
  std::optional<std::string> reasoning_budget_message;  // thinking_budget_message: --reasoning-budget-message's
  // A completions prompt: text, or token ids (checked against the vocabulary later).
  struct prompt_input {
    std::string text;
    std::vector<int64_t> ids;
    bool is_ids = false;
  };
  std::vector<prompt_input> prompts;  // completions: one or more, each answered by n choices
  int n = 1;                          // choices per prompt (sampled apart: seed + choice index)
  generation_params params;
};

// `defaults` are the server's sampling defaults (llama.cpp's, then the model's general.sampling.*);
// fields in the request override them.
api_result<completion_request> parse_chat_request(std::string_view body, const sampler_params& defaults);
api_result<completion_request> parse_completion_request(std::string_view body, const sampler_params& defaults);

// The JSON object of a body, or the 400 for a body that is not valid UTF-8 or not a JSON object.
api_result<nlohmann::json> parse_json_object(std::string_view body);

}  // namespace glia::server
