// A streamed Messages API answer as Anthropic's events: message_start (and a ping), then content
// blocks opened one after another (thinking, text, tool_use; the index counts them), each filled by
// deltas and closed before the next opens, then message_delta (stop reason, usage) and message_stop.
// Generated text goes in as it comes and is read as the chat endpoint reads it: reasoning apart, tool
// calls in the model's syntax held until the reply is whole (tool_choice auto), forced calls as they
// are written (any, tool).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/generation_setup.h"
#include "server/job.h"
#include "server/reasoning_split.h"
#include "server/required_call_stream.h"
#include "server/tool_gate.h"

namespace glia::server {

class anthropic_stream {
 public:
  // n_prompt_tokens: the prompt's length, which message_start reports before it is read.
  anthropic_stream(const reply_reading& reading, std::vector<std::string> stop_sequences, std::string model, int n_prompt_tokens);

  std::string start();
  // The events for a piece of generated text (none while it is held).
  std::string push(std::string_view text);
  // The events that end the message, from the finished job (its reason, stop string and counts).
  std::string finish(const job& j);
  // A failure after the stream began: Anthropic's error event.
  std::string error(const api_error& e);

 private:
  enum class block { none, thinking, text, tool_use };
  void open(block kind, nlohmann::ordered_json content_block);
  void close();
  void delta(nlohmann::ordered_json d);
  void thinking(const std::string& t);
  void text(const std::string& t);
  void call(const std::string& name);
  void input(const std::string& json_piece);
  void content(const std::string& t);
  std::string take();

  reply_reading reading_;
  std::vector<std::string> stop_sequences_;
  std::string model_;
  int n_prompt_tokens_;
  std::optional<reasoning_splitter> splitter_;
  std::optional<tool_reply_gate> gate_;
  std::optional<required_call_stream> required_;
  block open_ = block::none;
  int index_ = -1;
  size_t calls_ = 0;
  std::string out_;
};

// The blocks of a message (tool_use ids new).
nlohmann::ordered_json text_block(const std::string& text);
nlohmann::ordered_json thinking_block(const std::string& text);
nlohmann::ordered_json tool_use_block(const std::string& name, nlohmann::ordered_json input);

}  // namespace glia::server
