// What of a reply being generated with tools (tool_choice "auto") can go to a streaming client as
// content: text before the point where tool calls could start. From there on the text is held until
// the reply is finished and read (parse_tool_reply); when it then holds no calls, the held text goes
// out as content after all. Whitespace before a possible start is held
// too, so the streamed content ends as the whole reply's does (without it).
#pragma once

#include <string>
#include <string_view>

#include "server/tool_calls.h"

namespace glia::server {

class tool_reply_gate {
 public:
  explicit tool_reply_gate(tool_syntax syntax) : syntax_(syntax) {}

  // Adds generated text; returns the content that can go out now.
  std::string push(std::string_view piece);
  // The reply so far.
  const std::string& text() const { return text_; }
  // At the end, given how the reply read: the content still to go out.
  std::string finish(const parsed_reply& reply);

 private:
  tool_syntax syntax_;
  bool in_calls_ = false;  // the calls' start has been seen: everything from there is held
  std::string text_;
  size_t released_ = 0;  // bytes of text_ sent as content
  size_t think_end_ = std::string_view::npos;  // just after the reply's first </think>, once seen
};

}  // namespace glia::server
