// A streamed Messages API answer as Anthropic's events: message_start (and a ping), then the reply's
// blocks (server/reply_blocks.h) as content blocks, thinking, text and tool_use (the index counts them),
// each started, filled by deltas and stopped before the next starts, then message_delta (stop reason,
// usage) and message_stop. A whole answer is the same blocks put together (anthropic_message).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/job.h"
#include "server/reply_blocks.h"

namespace glia::server {

class anthropic_stream {
 public:
  // n_prompt: the prompt's length (the job's own count is set when it finishes).
  anthropic_stream(const reply_reading& reading, std::vector<std::string> stop_sequences, std::string model, int n_prompt = 0);

  // message_start, once the job has a slot (its usage then says what the slot's cache held, as
  // message_delta's does) or `now`: nullopt before.
  std::optional<std::string> start(const job& j, bool now);
  std::string start(int n_prompt, int n_reused);
  // The events for a piece of generated text (none while it is held).
  std::string push(std::string_view text);
  // The events that end the message, from the finished job (its reason, stop string and counts).
  std::string finish(const job& j);
  // A failure after the stream began: Anthropic's error event.
  std::string error(const api_error& e);
  std::string keep_alive() const;  // a ping event

 private:
  std::string events(const std::vector<block_event>& blocks);

  reply_blocks blocks_;
  std::vector<std::string> stop_sequences_;
  std::string model_;
  int n_prompt_;
  int index_ = -1;
};

// The whole message for a finished job's reply.
nlohmann::ordered_json anthropic_message(const reply_reading& reading, const std::vector<std::string>& stop_sequences, const std::string& model,
                                         const std::string& reply, const job& j);

}  // namespace glia::server
