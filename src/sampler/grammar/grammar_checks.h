// Checks a parsed grammar must pass before anything matches with it.
#pragma once

#include "core/status.h"
#include "sampler/grammar/grammar.h"

namespace glia::grammar {

// A rule that can reach itself before consuming a character (`expr ::= expr "+" term`, or through
// rules that may match nothing) would expand for ever: refused, naming the rule.
status check_left_recursion(const compiled& g);

// A rule the root can reach that never finishes (each alternative needs the rule itself again, as
// `x ::= "a" x`): text entering it could never end. Refused, naming the rule.
status check_finishes(const compiled& g);

// A character class the root can reach that matches no character (`[^\x00-\U0010FFFF]`): the text
// could never get past it, and generation would stop short of what the grammar asks. Refused,
// naming the rule.
status check_char_classes(const compiled& g);

}  // namespace glia::grammar
