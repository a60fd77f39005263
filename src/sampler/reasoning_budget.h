// How many tokens a reasoning model's thinking may take, and how many it took. Once the reply has
// spent `budget` tokens inside its reasoning without closing it, the sampler's next tokens are the
// forced ones (an optional closing message, then the close tag), as llama-server's
// --reasoning-budget and vLLM's thinking_token_budget do, so the model goes on to its answer instead
// of thinking until max_tokens runs out. The count starts after the open tag (or at the reply's
// start when the prompt opened the reasoning); a budget spent in the middle of a character waits for
// the character's last byte, so the reasoning stays valid UTF-8. Without a budget the tokens are only
// counted (reported as usage's reasoning_tokens).
//
// As the reply reader (server/reasoning_split.h) reads a reply, only a reply that opens with the tag
// (blanks before it aside) or starts inside the reasoning has any; the tags are matched in the
// tokens' text, so a tag of several tokens (Gemma 4's "<|channel>thought") is found as well.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sampler/params.h"
#include "sampler/stages.h"

namespace glia {

class reasoning_budget {
 public:
  reasoning_budget() = default;
  // token_text gives a token's text, control tokens included (the tags usually are some).
  reasoning_budget(const reasoning_limit& r, token_text_fn token_text);

  // The token the next step must be, or -1 when the model chooses.
  int32_t forced() const;
  // A generated token was kept.
  void accept(int32_t id);
  // Back to the reply's start.
  void reset();
  // Tokens of the reply that belong to its reasoning: its open tag, what is between, its close tag
  // (forced or not); all of a reply cut before the close.
  int tokens() const { return n_reasoning_; }

 private:
  enum class phase { start, reasoning, closing, done };
  // Enters the reasoning: `rest` is the text after the open tag.
  void enter(const std::string& rest);
  // Takes text inside the reasoning; leaves it when the close tag shows.
  void read_reasoning(const std::string& piece);
  // The budget is spent and no character is cut: the forced tokens start.
  void close_if_spent();

  reasoning_limit r_;
  token_text_fn text_;
  phase phase_ = phase::done;
  std::string seen_;  // start: the reply so far; reasoning: its last bytes (a tag or character cut)
  int spent_ = 0;     // tokens after the open tag
  int n_reasoning_ = 0;
  size_t next_forced_ = 0;
};

}  // namespace glia
