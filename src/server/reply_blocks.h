// A chat reply read into blocks as it is generated, for the APIs that answer in blocks (Anthropic's
// content blocks, the Responses API's output items): reasoning, text and tool calls, each opened,
// added to and closed before the next opens. The reading is the chat endpoint's: reasoning apart
// (reasoning_splitter), calls in the model's syntax held until the reply is whole (tool_reply_gate,
// tool_choice auto), a forced choice's calls as they are written (required_call_stream; a named
// function's whole reply is its arguments). Pieces may cut the text anywhere: the blocks do not
// depend on where.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/generation_setup.h"
#include "server/reasoning_split.h"
#include "server/required_call_stream.h"
#include "server/tool_gate.h"

namespace glia::server {

enum class block_kind { reasoning, text, call };

struct block_event {
  enum class what { open, add, close } action;
  block_kind kind;
  std::string text;  // add: the piece (a call's: arguments text); open of a call: the function's name
};

class reply_blocks {
 public:
  explicit reply_blocks(const reply_reading& reading);

  // The events of a piece of generated text (none while it is held).
  std::vector<block_event> push(std::string_view piece);
  // At the end: what was held, the calls read from the whole reply, the last block's close.
  std::vector<block_event> finish();
  // At a failure: the open block's close, nothing more.
  std::vector<block_event> cut();

  size_t calls() const { return calls_.size(); }
  // After finish: calls came and each one's arguments are a whole JSON object (not cut short).
  bool calls_complete() const;

 private:
  void open(block_kind kind, std::string name = {});
  void add(block_kind kind, const std::string& text);
  void close();
  void call(const std::string& name);
  void arguments(const std::string& text);
  void content(const std::string& text);

  reply_reading reading_;
  std::optional<reasoning_splitter> splitter_;
  std::optional<tool_reply_gate> gate_;
  std::optional<required_call_stream> required_;
  std::optional<block_kind> open_;
  std::vector<std::string> calls_;  // each call's arguments so far
  std::vector<block_event> out_;
};

// A whole reply's blocks, put together: kind, text (a call's arguments) and a call's name.
struct reply_block {
  block_kind kind;
  std::string text;
  std::string name;
};
std::vector<reply_block> fold_blocks(const std::vector<block_event>& events);

}  // namespace glia::server
