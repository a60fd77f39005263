// A POST /v1/responses body (OpenAI's Responses API, which the openai SDKs' `responses` calls, Codex
// and agent frameworks speak; vLLM serves it too) read as the chat request it stands for:
//   instructions                        -> a first "system" message
//   input: a string                     -> one user message
//   input items: messages (system, developer, user, assistant; input_text/output_text parts, joined
//     by newlines), function_call       -> an assistant's tool_calls (call_id as the id),
//     function_call_output              -> a "tool" message, reasoning (its text) -> the next
//     assistant message's reasoning_content
//   max_output_tokens, temperature, top_p, tools (function tools, flat), tool_choice, parallel_tool_calls,
//   text.format (text, json_object, json_schema) -> response_format, reasoning.effort -> reasoning_effort
// Nothing is stored: previous_response_id, conversation and background are refused, as are hosted
// tools (web search, file search, ...) and images or files in the input (400).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "server/request.h"

namespace glia::server {

struct responses_api_request {
  completion_request chat;
  // The request's settings a response object repeats (instructions, tools, tool_choice, text, ...).
  nlohmann::ordered_json settings;
};

api_result<responses_api_request> parse_responses_api_request(std::string_view body, const sampler_params& defaults);

// An error the chat request's reading gave, in the Responses API's terms (input, max_output_tokens,
// text.format, reasoning.effort, flat function tools).
api_error in_responses_api_terms(api_error e);

}  // namespace glia::server
