#include "server/tool_gate.h"

#include "server/reply_text.h"

namespace glia::server {

std::string tool_reply_gate::push(std::string_view piece) {
  const size_t old_size = text_.size();
  text_ += piece;
  if (in_calls_) return {};
  size_t end = text_.size();
  if (syntax_ == tool_syntax::llama3_json && released_ > 0) {
    // The reply began as text, so it is not a call: everything is content.
  } else {
    // Markers are searched for from the released point on: nothing before it can start one (a
    // trailing part that could was held); and not inside the reply's reasoning.
    size_t from = released_;
    bool thinking = false;
    if (syntax_ != tool_syntax::llama3_json) {
      // Only the new text (and a tag the piece boundary cut) is scanned for </think>.
      if (think_end_ == std::string_view::npos) think_end_ = think_close_end(text_, old_size > 16 ? old_size - 16 : 0);
      if (think_end_ != std::string_view::npos) from = std::max(from, think_end_);
      else thinking = opens_thinking(text_);
    }
    if (thinking) {
      end = partial_think_close_at(text_);
    } else {
      size_t maybe_at = 0;
      const size_t start = tool_calls_start(syntax_, text_, from, maybe_at);
      if (start != std::string_view::npos) {
        in_calls_ = true;
        end = start;
      } else {
        end = maybe_at;
      }
    }
    end = std::max(end, released_);
    while (end > released_ && is_blank(text_[end - 1])) --end;
  }
  std::string out = text_.substr(released_, end - released_);
  released_ = end;
  return out;
}

std::string tool_reply_gate::finish(const parsed_reply& reply) {
  // The reply's content is a prefix of its text, and so is what went out.
  const std::string& content = reply.calls.empty() ? text_ : reply.content;
  std::string out = released_ < content.size() ? content.substr(released_) : std::string();
  released_ = text_.size();
  return out;
}

}  // namespace glia::server
