// The shapes of Anthropic's Messages API answers: a whole message, the events of a streamed one
// (message_start, content_block_start/delta/stop, message_delta, message_stop, ping, error), usage,
// stop reasons and errors ({"type": "error", "error": {"type", "message"}}).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/job.h"

namespace glia::server {

// Whether a path is one of the Messages API's (its errors take Anthropic's shape).
bool is_anthropic_path(std::string_view path);
std::string anthropic_error_json(const api_error& e);

// "msg_" and 24 letters or digits; "toolu_" likewise for a tool_use block.
std::string new_message_id();
std::string new_tool_use_id();

// Why a reply ended, as Anthropic names it: tool_use (a reply read as whole calls), max_tokens,
// stop_sequence (one of the client's stop_sequences; `matched` is set to it) or end_turn.
std::string stop_reason_of(const job& j, bool has_calls, const std::vector<std::string>& stop_sequences, std::string& matched);

// Usage: input_tokens is the prompt less what was read from the slot's cache (reported as
// cache_read_input_tokens, as Anthropic counts a cache hit).
nlohmann::ordered_json anthropic_usage(int n_prompt, int n_reused, int n_generated);

// A whole message. `content` is its list of blocks.
nlohmann::ordered_json message_json(const std::string& id, const std::string& model, nlohmann::ordered_json content,
                                    const std::string& stop_reason, const std::string& stop_sequence, nlohmann::ordered_json usage);

// One event of a stream: "event: TYPE\ndata: JSON\n\n" (data's "type" is TYPE).
std::string anthropic_event(const nlohmann::ordered_json& data);

}  // namespace glia::server
