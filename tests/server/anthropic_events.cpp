#include "anthropic_events.h"

#include <gtest/gtest.h>

namespace glia::test {

using nlohmann::json;

std::vector<sse_event> events_of(const std::string& body) {
  std::vector<sse_event> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string block = body.substr(pos, end - pos);
    pos = end + 2;
    if (block.empty()) continue;
    sse_event e;
    for (size_t at = 0; at < block.size();) {
      size_t nl = block.find('\n', at);
      if (nl == std::string::npos) nl = block.size();
      const std::string line = block.substr(at, nl - at);
      if (line.starts_with("event: ")) e.name = line.substr(7);
      if (line.starts_with("data: ")) e.data = json::parse(line.substr(6), nullptr, false);
      at = nl + 1;
    }
    out.push_back(std::move(e));
  }
  return out;
}

json message_of_stream(const std::string& body) {
  const auto events = events_of(body);
  EXPECT_GE(events.size(), 3u) << body;
  if (events.size() < 3) return json();
  EXPECT_EQ(events.front().name, "message_start") << body;
  json m = events.front().data["message"];
  int open = -1, next = 0;
  bool delta_seen = false;
  for (size_t i = 1; i < events.size(); ++i) {
    const sse_event& e = events[i];
    EXPECT_EQ(e.data["type"], e.name) << body;
    if (e.name == "ping") continue;
    EXPECT_FALSE(delta_seen && e.name != "message_stop") << "events after message_delta: " << body;
    if (e.name == "content_block_start") {
      EXPECT_EQ(open, -1) << body;
      EXPECT_EQ(e.data["index"], next) << body;
      open = next++;
      m["content"].push_back(e.data["content_block"]);
      if (m["content"].back()["type"] == "tool_use") m["content"].back()["partial"] = "";
    } else if (e.name == "content_block_delta") {
      EXPECT_EQ(e.data["index"], open) << body;
      json& b = m["content"][size_t(open)];
      const json& d = e.data["delta"];
      if (d["type"] == "text_delta") b["text"] = b["text"].get<std::string>() + d["text"].get<std::string>();
      else if (d["type"] == "thinking_delta") b["thinking"] = b["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      else if (d["type"] == "input_json_delta") b["partial"] = b["partial"].get<std::string>() + d["partial_json"].get<std::string>();
      else ADD_FAILURE() << "delta type " << d["type"];
    } else if (e.name == "content_block_stop") {
      EXPECT_EQ(e.data["index"], open) << body;
      json& b = m["content"][size_t(open)];
      if (b["type"] == "tool_use") {
        // Deltas cut short (max_tokens) leave the start's {} in place, as a whole answer gives it.
        const json input = json::parse(b["partial"].get<std::string>(), nullptr, false);
        if (input.is_object()) b["input"] = input;
        b.erase("partial");
      }
      open = -1;
    } else if (e.name == "message_delta") {
      EXPECT_EQ(open, -1) << body;
      m["stop_reason"] = e.data["delta"]["stop_reason"];
      m["stop_sequence"] = e.data["delta"]["stop_sequence"];
      m["usage"] = e.data["usage"];
      delta_seen = true;
    } else {
      EXPECT_EQ(e.name, "message_stop") << body;
      EXPECT_EQ(i, events.size() - 1) << body;
    }
  }
  EXPECT_TRUE(delta_seen) << body;
  return m;
}

}  // namespace glia::test
