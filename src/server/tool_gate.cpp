#include "server/tool_gate.h"

namespace glia::server {

namespace {
bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
}  // namespace

std::string tool_reply_gate::push(std::string_view piece) {
  text_ += piece;
  if (hold_all_ || in_calls_) return {};
  size_t end = text_.size();
  if (syntax_ == tool_syntax::llama3_json && released_ > 0) {
    // The reply began as text, so it is not a call: everything is content.
  } else {
    // Markers are searched for from the released point on: nothing before it can start one (a
    // trailing part that could was held). llama3_json looks at the reply's start.
    const size_t from = syntax_ == tool_syntax::llama3_json ? 0 : released_;
    size_t maybe_at = 0;
    const size_t start = tool_calls_start(syntax_, std::string_view(text_).substr(from), maybe_at);
    if (start != std::string_view::npos) {
      in_calls_ = true;
      end = from + start;
    } else {
      end = from + maybe_at;
    }
    while (end > released_ && blank(text_[end - 1])) --end;
  }
  std::string out = text_.substr(released_, end - released_);
  released_ = end;
  return out;
}

std::string tool_reply_gate::finish(bool has_calls) {
  if (has_calls) return {};
  std::string out = text_.substr(released_);
  released_ = text_.size();
  return out;
}

}  // namespace glia::server
