#include "server/reasoning_split.h"

#include "server/reply_text.h"

namespace glia::server {
namespace {

constexpr reasoning_tags think_tags{"<think>", "</think>", "<think>"};
constexpr reasoning_tags gemma4_tags{"<|channel>thought", "<channel|>", "<|channel>"};

}  // namespace

std::optional<reasoning_tags> reasoning_tags_of(std::string_view t) {
  for (const reasoning_tags& tags : {think_tags, gemma4_tags})
    if (t.find(tags.open) != std::string_view::npos && t.find(tags.close) != std::string_view::npos) return tags;
  return std::nullopt;
}

bool leaves_reasoning_open(std::string_view text, const reasoning_tags& tags) {
  const size_t open = text.rfind(tags.open);
  return open != std::string_view::npos && text.find(tags.close, open) == std::string_view::npos;
}

bool prompt_opens_reasoning(std::string_view p, const reasoning_tags& tags) {
  return trim_end(p).ends_with(tags.open);
}

reply_parts reasoning_splitter::push(std::string_view piece) {
  held_ += piece;
  reply_parts out;
  while (true) {
    switch (state_) {
      case state::start: {
        const std::string_view rest = std::string_view(held_).substr(skip_blanks(held_));
        if (rest.starts_with(tags_.open)) {
          held_.erase(0, held_.size() - rest.size() + tags_.open.size());
          state_ = state::reasoning_lead;
          continue;
        }
        if (rest.empty() || tags_.open.starts_with(rest)) return out;  // may still become <think>
        state_ = state::content;
        continue;
      }
      case state::reasoning_lead:
      case state::content_lead: {
        held_.erase(0, skip_blanks(held_));
        if (held_.empty()) return out;
        state_ = state_ == state::reasoning_lead ? state::reasoning : state::content;
        continue;
      }
      case state::reasoning: {
        if (const size_t close = held_.find(tags_.close); close != std::string::npos) {
          if (close > unshown_) out.reasoning += trim_end(std::string_view(held_).substr(unshown_, close - unshown_));
          held_.erase(0, close + tags_.close.size());
          unshown_ = 0;
          state_ = state::content_lead;
          continue;
        }
        // Hold what may be the start of </think>, and trailing whitespace (trimmed if </think> follows).
        const size_t end = trim_end(std::string_view(held_).substr(0, partial_tag_at(held_, tags_.close))).size();
        if (end > unshown_) out.reasoning += held_.substr(unshown_, end - unshown_);
        held_.erase(0, end);
        unshown_ -= std::min(unshown_, end);
        return out;
      }
      case state::content:
        out.content += held_;
        held_.clear();
        return out;
    }
  }
}

reply_parts reasoning_splitter::finish() {
  reply_parts out;
  if (state_ == state::start || state_ == state::content) out.content = held_;
  if (state_ == state::reasoning && held_.size() > unshown_)
    out.reasoning = trim_end(std::string_view(held_).substr(unshown_));  // cut before </think>: all of it is reasoning
  held_.clear();
  return out;
}

reply_parts split_reasoning(std::string_view reply, const reasoning_tags& tags, reasoning_start start, std::string_view before) {
  reasoning_splitter s(tags, start, before);
  reply_parts a = s.push(reply), b = s.finish();
  return {a.reasoning + b.reasoning, a.content + b.content};
}

}  // namespace glia::server
