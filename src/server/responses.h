// The OpenAI response objects: chat.completion / text_completion (whole answers), their streaming
// chunks, usage, and the two logprobs shapes (chat: content[] entries; completions: parallel arrays).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/job.h"
#include "server/tool_calls.h"

namespace glia::server {

struct response_meta {
  std::string id;      // chatcmpl-... / cmpl-...
  int64_t created = 0;  // Unix seconds
  std::string model;
  bool chat = false;
  int choice_index = 0;  // the "index" of the choice a response or chunk carries
};

response_meta new_response_meta(bool chat, const std::string& model);
const char* finish_reason_name(finish_kind k);  // "stop" | "length"
// n_reasoning: of the generated tokens, the reasoning's (chat: completion_tokens_details, as OpenAI
// reports it); -1 leaves the details out (completions).
nlohmann::json usage_json(int n_prompt, int n_generated, int n_reasoning = -1);
nlohmann::json logprobs_json(bool chat, const std::vector<token_logprob>& lps);

// A whole answer (non-streaming). With tool calls (chat), the message lists them and its content is
// the text before them, null when there is none; a reasoning model's reasoning is reasoning_content.
nlohmann::json completion_json(const response_meta& m, const std::string& text, const std::vector<token_logprob>* lps,
                               finish_kind reason, int n_prompt, int n_generated, const std::vector<tool_call>& calls = {},
                               const std::string& reasoning = {});
// One streaming chunk. `role_delta`: the first chat chunk carries {"role": "assistant"}.
// `finish`: finish_kind::none for a chunk in the middle. With include_usage every chunk has "usage": null.
nlohmann::json chunk_json(const response_meta& m, const std::string& text, const std::vector<token_logprob>* lps,
                          bool role_delta, finish_kind finish, bool include_usage);
// A chat chunk of reasoning: {"delta": {"reasoning_content": ...}}.
nlohmann::json reasoning_chunk_json(const response_meta& m, const std::string& reasoning, const std::vector<token_logprob>* lps,
                                    bool role_delta, bool include_usage);
// A chat chunk carrying one reply's tool calls, whole: {"delta": {"tool_calls": [{"index", "id", "type",
// "function": {"name", "arguments"}}]}} (clients put streamed calls together by index).
nlohmann::json tool_calls_chunk_json(const response_meta& m, const std::vector<tool_call>& calls, bool role_delta, bool include_usage);
// The last chunk of a stream with stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk_json(const response_meta& m, nlohmann::json usage);

}  // namespace glia::server
