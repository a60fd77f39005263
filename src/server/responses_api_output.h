// The Responses API's answers: a response object whose output items are the reply's blocks
// (server/reply_blocks.h) as reasoning, message (output_text) and function_call items, whole or
// streamed as OpenAI's events (response.created, response.in_progress, then per item
// output_item.added, its content part or arguments deltas and .done events, output_item.done, and
// finally response.completed or response.incomplete; every event numbered by sequence_number).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/job.h"
#include "server/reply_blocks.h"

namespace glia::server {

// The response object's fixed parts: its id, creation time, model and the request's settings.
struct response_head {
  std::string id;  // resp_...
  int64_t created_at = 0;
  std::string model;
  nlohmann::ordered_json settings;
};
response_head new_response_head(std::string model, nlohmann::ordered_json settings);

class responses_api_stream {
 public:
  responses_api_stream(const reply_reading& reading, response_head head);

  std::string start();  // response.created, response.in_progress
  // As sse_job_stream drives a writer: the opening events at once; an SSE comment to keep alive.
  std::optional<std::string> start(const job&, bool) { return start(); }
  std::string keep_alive() const;
  std::string push(std::string_view text);
  std::string finish(const job& j);  // the last items' .done events, response.completed or .incomplete
  std::string error(const api_error& e);

 private:
  // cut: the reply was cut inside the last item these events close.
  std::string events(const std::vector<block_event>& blocks, bool cut = false);
  std::string event(nlohmann::ordered_json e);

  reply_blocks blocks_;
  response_head head_;
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();  // the items so far
  int sequence_ = 0;
};

// The whole response for a finished job's reply.
nlohmann::ordered_json responses_api_response(const reply_reading& reading, const response_head& head, const std::string& reply, const job& j);

// An error in OpenAI's shape for a stream's "error" event.
std::string responses_api_error_event(const api_error& e, int sequence_number);

}  // namespace glia::server
