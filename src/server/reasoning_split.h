// A reasoning model's reply in two parts, as llama-server (--reasoning-format deepseek, its default)
// and vLLM's reasoning parsers return it: the reasoning between <think> and </think> as
// "reasoning_content", the rest as "content". Qwen3, QwQ and DeepSeek's R1 distills write it so;
// some templates open the reasoning themselves (the prompt ends with <think>), and the reply then
// starts inside it. The reasoning is trimmed of surrounding whitespace, the content of leading
// whitespace after </think>; a reply cut before </think> is all reasoning. A reply that does not
// open with <think> (and did not start inside) is content, as it is.
#pragma once

#include <string>
#include <string_view>

namespace glia::server {

// Whether a chat template's replies reason between <think> and </think>.
bool template_thinks(std::string_view template_source);
// Whether a rendered prompt leaves the reply inside the reasoning (it ends with an open <think>).
bool prompt_opens_reasoning(std::string_view prompt);

struct reply_parts {
  std::string reasoning, content;
};

// Splits a reply as it is generated: push() returns what can go out now; finish() the rest. Pieces
// may cut the tags anywhere; the parts put together do not depend on where.
class reasoning_splitter {
 public:
  explicit reasoning_splitter(bool starts_inside) : state_(starts_inside ? state::reasoning_lead : state::start) {}
  reply_parts push(std::string_view piece);
  reply_parts finish();

 private:
  enum class state { start, reasoning_lead, reasoning, content_lead, content };
  state state_;
  std::string held_;
};

// A whole reply, split.
reply_parts split_reasoning(std::string_view reply, bool starts_inside);

}  // namespace glia::server
