// Where a grammar that waits for a reasoning model's thinking stands (sampler_params::grammar_after):
// at the reply's first token, which may open the reasoning; inside the reasoning, free; after it,
// constrained. Without a deferral the grammar holds from the start.
#pragma once

#include <cstdint>
#include <string>

#include "sampler/params.h"
#include "sampler/stages.h"

namespace glia {

class reasoning_gate {
 public:
  reasoning_gate() = default;
  // tags: the reasoning's close tag and where the reply starts; open_id: the token the reply may open
  // it with (-1: none). token_text gives a token's text, control tokens included (the close tag
  // usually is one).
  reasoning_gate(const reasoning_limit& tags, int32_t open_id, token_text_fn token_text);

  // The grammar constrains the next token (with the opening token allowed besides, see below).
  bool constrains() const { return phase_ != phase::reasoning; }
  // The token the reply may open its reasoning with, allowed beside the grammar's; -1 when none is.
  int32_t opening_token() const { return phase_ == phase::first ? open_id_ : -1; }
  // What of a kept token the grammar takes: all of it, or only the text after the close tag that
  // ended the reasoning inside it (`rest`, leading whitespace left out, as the reply's content
  // leaves it out), or nothing.
  struct taken {
    bool whole = false;
    std::string rest;
  };
  taken accept(int32_t id);
  // Back to the reply's start.
  void reset();

 private:
  enum class phase { first, reasoning, constrained };
  phase start_phase() const;

  bool deferred_ = false;
  bool starts_inside_ = false;
  int32_t open_id_ = -1;
  std::string close_;
  std::string before_;
  token_text_fn text_;
  phase phase_ = phase::constrained;
  std::string tail_;  // the reasoning's last bytes, where a close tag split across tokens shows
};

}  // namespace glia
