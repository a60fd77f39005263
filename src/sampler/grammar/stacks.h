// Where a grammar match can be: a set of stacks of positions (indices into compiled::elements), the
// top of each a character set still to match, the rest what follows once the top's rule is done.
// An empty stack means the text so far is a whole sentence. Following a character replaces each
// stack by the stacks its next position expands to; ambiguity shows as several stacks.
#pragma once

#include <cstdint>
#include <vector>

#include "sampler/grammar/grammar.h"

namespace glia::grammar {

using stack = std::vector<uint32_t>;
using stack_set = std::vector<stack>;  // sorted, without duplicates

// Bounds against grammars whose matches branch or nest without limit: stacks past them are dropped
// (the text is then treated as leaving the grammar).
constexpr size_t max_stacks = 4096;
constexpr size_t max_stack_depth = 4096;

stack_set initial_stacks(const compiled& g);
// The stacks after matching code point cp (empty: cp leaves the grammar).
stack_set advance(const compiled& g, const stack_set& from, uint32_t cp);
bool is_complete(const stack_set& s);

bool char_matches(const element& e, uint32_t cp);
// Whether some code point in [lo, hi] matches e (for a character whose first bytes are known).
bool range_may_match(const element& e, uint32_t lo, uint32_t hi);

}  // namespace glia::grammar
