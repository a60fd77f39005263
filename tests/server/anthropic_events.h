// Reading Anthropic's event streams in tests: the events of an SSE body, and the message they add up
// to, its event grammar checked on the way (gtest expectations).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace glia::test {

struct sse_event {
  std::string name;
  nlohmann::json data;
};

// Anthropic's framing: "event: NAME\ndata: JSON\n\n".
std::vector<sse_event> events_of(const std::string& body);
// message_start, then blocks each opened, filled and closed in index order, message_delta,
// message_stop; each event's name its type. A tool_use block's input is its input_json_deltas parsed
// (when they make an object).
nlohmann::json message_of_stream(const std::string& body);

}  // namespace glia::test
