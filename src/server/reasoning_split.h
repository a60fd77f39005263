// A reasoning model's reply in two parts, as llama-server (--reasoning-format deepseek, its default)
// and vLLM's reasoning parsers return it: the reasoning between its tags as "reasoning_content", the
// rest as "content". Qwen3, QwQ and DeepSeek's R1 distills reason between <think> and </think>;
// Gemma 4 in its thought channel, <|channel>thought ... <channel|>. Some templates open the reasoning
// themselves (the prompt ends with the open tag), and the reply then starts inside it. The reasoning
// is trimmed of surrounding whitespace, the content of leading whitespace after the close tag; a
// reply cut before it is all reasoning. A reply that does not open with the tag (and did not start
// inside) is content, as it is.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/reply_text.h"

namespace glia::server {

struct reasoning_tags {
  std::string_view open, close;
  std::string_view open_token;  // the token the open tag starts with (the close tag is one token)
};

// The tags a chat template's replies reason between; nullopt when it writes none.
std::optional<reasoning_tags> reasoning_tags_of(std::string_view template_source);
// Whether a rendered prompt leaves the reply inside the reasoning (it ends with the open tag).
bool prompt_opens_reasoning(std::string_view prompt, const reasoning_tags& tags);
// Whether a text (an assistant message being continued) opened the reasoning and has not closed it.
bool leaves_reasoning_open(std::string_view text, const reasoning_tags& tags);

struct reply_parts {
  std::string reasoning, content;
};

// Where a reply starts: outside the reasoning (it may open it), just after the open tag (the prompt
// ended with it: the whitespace after the tag is not reasoning), or in the middle of reasoning text
// (a prefill that opened it is being continued: every byte counts).
enum class reasoning_start { outside, after_open_tag, mid_reasoning };

// Splits a reply as it is generated: push() returns what can go out now; finish() the rest. Pieces
// may cut the tags anywhere; the parts put together do not depend on where.
class reasoning_splitter {
 public:
  // before: in the middle of reasoning, the text being continued may end with the start of the
  // close tag ("</think"), which the reply's first bytes complete; it is matched, never returned.
  reasoning_splitter(const reasoning_tags& tags, reasoning_start start, std::string_view before = {})
      : tags_(tags),
        state_(start == reasoning_start::outside          ? state::start
               : start == reasoning_start::after_open_tag ? state::reasoning_lead
                                                          : state::reasoning) {
    if (state_ == state::reasoning) {
      held_ = before.substr(partial_tag_at(before, tags_.close));
      unshown_ = held_.size();
    }
  }
  reply_parts push(std::string_view piece);
  reply_parts finish();

 private:
  enum class state { start, reasoning_lead, reasoning, content_lead, content };
  reasoning_tags tags_;
  state state_;
  std::string held_;
  size_t unshown_ = 0;  // held_ starts with this many bytes of the text before the reply
};

// A whole reply, split (`before` as for reasoning_splitter).
reply_parts split_reasoning(std::string_view reply, const reasoning_tags& tags, reasoning_start start, std::string_view before = {});

}  // namespace glia::server
