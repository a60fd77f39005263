// A POST /v1/messages body (Anthropic's Messages API, which Claude Code and the Anthropic SDKs
// speak; llama-server and vLLM serve it too) read as the chat request it stands for, so both APIs
// share one prompt builder, one sampler and one reading of the reply:
//   system (a string or text blocks)      -> a first "system" message
//   messages' text blocks                 -> the message's text (blocks joined by newlines)
//   an assistant's tool_use blocks        -> its tool_calls (input as the arguments)
//   a user's tool_result blocks           -> "tool" messages, before the user's text
//   an assistant's thinking blocks        -> its reasoning_content (redacted ones are dropped)
//   a final assistant message             -> a prefill the reply continues (continue_final_message)
//   tools {name, description, input_schema} and tool_choice auto/any/tool/none,
//   disable_parallel_tool_use             -> OpenAI's tools, tool_choice, parallel_tool_calls
//   stop_sequences                        -> stop; thinking enabled/disabled -> enable_thinking
// Consecutive messages of one role are one turn, as Anthropic combines them. Images, documents and
// Anthropic's own server tools are refused (400), as are fields Anthropic does not define, but for
// glia's sampling extensions (seed, min_p, penalties, logit_bias, grammars, chat_template_kwargs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/request.h"

namespace glia::server {

struct messages_request {
  completion_request chat;
  std::vector<std::string> stop_sequences;  // the client's own (chat.params.stop gets the template's end of turn too)
};

// `counting`: for /v1/messages/count_tokens, where max_tokens is not given.
api_result<messages_request> parse_messages_request(std::string_view body, const sampler_params& defaults, bool counting = false);

// An error the chat request's reading gave, in the Messages API's terms: its tool fields and choices
// as Anthropic spells them (input_schema, {"type": "any"}, ...).
api_error in_anthropic_terms(api_error e);

}  // namespace glia::server
