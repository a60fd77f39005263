// A "required" tool choice's reply, [{"name": "f", "parameters": {...}}, ...] (the shape its grammar
// writes), read as it is generated so that each call streams as it comes, as vLLM and OpenAI stream
// them: a call opens once its name is whole, then its parameters' text goes out as argument pieces,
// exactly as written (the text the whole reply's reading returns as the arguments).
// Hand-written: a byte scanner for one fixed JSON shape; no JSON library reads an incomplete text
// and says where a member's value starts.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glia::server {

struct call_piece {
  size_t index = 0;                 // the call's place in the reply
  std::optional<std::string> name;  // the call opens with this piece
  std::string arguments;            // text to add to its arguments
};

class required_call_stream {
 public:
  // at_most: how many calls may open (1 without parallel tool calls, as the whole reading keeps).
  explicit required_call_stream(size_t at_most) : at_most_(at_most) {}

  // Adds generated text; the calls it opens and the argument text it adds.
  std::vector<call_piece> push(std::string_view piece);
  // How many calls have opened.
  size_t opened() const { return opened_; }
  // The text so far.
  const std::string& text() const { return text_; }

 private:
  void step(char c, size_t at, std::vector<call_piece>& out);
  void emit_arguments(size_t end, std::vector<call_piece>& out);

  size_t at_most_;
  std::string text_;
  size_t opened_ = 0;
  int depth_ = 0;        // brackets open around the scan position
  bool in_string_ = false, escaped_ = false;
  size_t string_start_ = 0;          // where the string being read starts (after its quote)
  std::string key_;                  // the element's member whose value comes next (depth 2)
  bool after_colon_ = false;         // a member's value is due (depth 2)
  bool has_name_ = false;             // the element's name has been read
  bool element_opened_ = false;       // and its call opened (not past at_most)
  std::optional<size_t> args_start_;  // where the element's arguments value starts
  std::optional<size_t> args_end_;    // one past it, once it closed
  size_t args_sent_ = 0;              // bytes of it that went out
};

}  // namespace glia::server
