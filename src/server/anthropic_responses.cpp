#include "server/anthropic_responses.h"

#include <algorithm>

#include "core/json_text.h"
#include "server/random_id.h"

namespace glia::server {

using ojson = nlohmann::ordered_json;

bool is_anthropic_path(std::string_view path) { return path == "/v1/messages" || path.starts_with("/v1/messages/"); }

std::string anthropic_error_json(const api_error& e) {
  // Anthropic's error types by status (https://docs.anthropic.com/en/api/errors).
  const char* type = "invalid_request_error";
  switch (e.status) {
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 503: type = "overloaded_error"; break;
    default:
      if (e.status >= 500) type = "api_error";
  }
  return ordered_json_text(ojson{{"type", "error"}, {"error", {{"type", type}, {"message", e.message}}}});
}

std::string new_message_id() { return random_id("msg_", 24); }
std::string new_tool_use_id() { return random_id("toolu_", 24); }

std::string stop_reason_of(const job& j, bool has_calls, const std::vector<std::string>& stop_sequences, std::string& matched) {
  // Calls that are whole are to be run, even when max_tokens cut the whitespace a grammar allows after
  // them (as the chat endpoint's finish reason says tool_calls).
  if (has_calls) return "tool_use";
  if (j.reason == finish_kind::length) return "max_tokens";
  for (const auto& s : stop_sequences)
    if (!j.stop_string.empty() && s == j.stop_string) {
      matched = s;
      return "stop_sequence";
    }
  return "end_turn";
}

ojson anthropic_usage(int n_prompt, int n_reused, int n_generated) {
  n_reused = std::max(n_reused, 0);  // not known yet (the job has not reached a slot)
  return {{"input_tokens", n_prompt - n_reused},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", n_reused},
          {"output_tokens", n_generated}};
}

ojson message_json(const std::string& id, const std::string& model, ojson content, const std::string& stop_reason,
                   const std::string& stop_sequence, ojson usage) {
  ojson m = {{"id", id}, {"type", "message"}, {"role", "assistant"}, {"model", model}, {"content", std::move(content)}};
  m["stop_reason"] = stop_reason.empty() ? ojson() : ojson(stop_reason);
  m["stop_sequence"] = stop_sequence.empty() ? ojson() : ojson(stop_sequence);
  m["usage"] = std::move(usage);
  return m;
}

std::string anthropic_event(const ojson& data) {
  std::string out = "event: ";
  out += data["type"].get<std::string>();
  out += "\ndata: ";
  out += ordered_json_text(data);
  out += "\n\n";
  return out;
}

}  // namespace glia::server
