#include "server/required_call_stream.h"

#include <nlohmann/json.hpp>

namespace glia::server {
namespace {

// A JSON string's text without its escapes (a name as the whole reply's reading gives it).
std::string unescaped(const std::string& raw) {
  if (raw.find('\\') == std::string::npos) return raw;
  const auto v = nlohmann::json::parse("\"" + raw + "\"", nullptr, false);
  return v.is_string() ? v.get<std::string>() : raw;
}

}  // namespace

std::vector<call_piece> required_call_stream::push(std::string_view piece) {
  std::vector<call_piece> out;
  const size_t from = text_.size();
  text_ += piece;
  for (size_t i = from; i < text_.size(); ++i) step(text_[i], i, out);
  if (args_start_ && !args_end_) emit_arguments(text_.size(), out);
  return out;
}

// Sends the arguments' text up to `end` (once the call has opened: a name may follow its arguments).
void required_call_stream::emit_arguments(size_t end, std::vector<call_piece>& out) {
  if (!element_opened_ || end <= *args_start_ + args_sent_) return;
  const size_t from = *args_start_ + args_sent_;
  if (!out.empty() && out.back().index == opened_ - 1) out.back().arguments += text_.substr(from, end - from);
  else out.push_back({opened_ - 1, std::nullopt, text_.substr(from, end - from)});
  args_sent_ = end - *args_start_;
}

void required_call_stream::step(char c, size_t at, std::vector<call_piece>& out) {
  if (in_string_) {
    if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
    } else if (c == '"') {
      in_string_ = false;
      if (depth_ != 2) return;
      if (!after_colon_) {
        key_ = text_.substr(string_start_, at - string_start_);  // a member's key
      } else {
        if (key_ == "name" && !has_name_) {
          has_name_ = true;
          if (opened_ < at_most_) {
            element_opened_ = true;
            out.push_back({opened_++, unescaped(text_.substr(string_start_, at - string_start_)), ""});
            if (args_start_) emit_arguments(args_end_.value_or(at), out);  // the arguments came first
          }
        }
        after_colon_ = false;
      }
    }
    return;
  }
  switch (c) {
    case '"':
      in_string_ = true;
      string_start_ = at + 1;
      return;
    case '{':
    case '[':
      // The arguments are an object (the tools' parameters describe one).
      if (c == '{' && depth_ == 2 && after_colon_ && !args_start_ && (key_ == "parameters" || key_ == "arguments")) args_start_ = at;
      if (depth_ == 1) {
        // A new element: its own name and arguments.
        key_.clear();
        after_colon_ = false;
        has_name_ = element_opened_ = false;
        args_start_.reset();
        args_end_.reset();
        args_sent_ = 0;
      }
      ++depth_;
      return;
    case '}':
    case ']':
      --depth_;
      if (depth_ == 2 && args_start_ && !args_end_) {
        args_end_ = at + 1;
        emit_arguments(*args_end_, out);
        after_colon_ = false;
        key_.clear();
      }
      return;
    case ':':
      if (depth_ == 2) after_colon_ = true;
      return;
    case ',':
      if (depth_ == 2) {
        after_colon_ = false;
        key_.clear();
      }
      return;
    default: return;
  }
}

}  // namespace glia::server
