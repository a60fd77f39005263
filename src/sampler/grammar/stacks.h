// Where a grammar match can be: a set of stacks of positions (indices into compiled::elements), the
// top of each a character set still to match, the rest what follows once the top's rule is done.
// An empty stack means the text so far is a whole sentence. Following a character replaces each
// stack by the stacks its next position expands to; ambiguity shows as several stacks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sampler/grammar/grammar.h"

namespace glia::grammar {

using stack = std::vector<uint32_t>;
using stack_set = std::vector<stack>;  // sorted, without duplicates

// Bounds on one step's work, against grammars whose matches branch or nest without limit (2^n
// stacks from n ambiguous rules, a nesting deeper than any text needs). A step past them fails as a
// whole (nullopt) rather than dropping stacks, which would silently narrow the language.
constexpr size_t max_stacks = 65536;       // distinct stacks after one character
constexpr size_t max_stack_depth = 4096;   // positions on one stack
constexpr size_t max_expand_steps = 2'000'000;  // stacks examined while expanding for one character
// Positions copied while expanding for one character (the stacks' count times their depth: the
// memory and time of one step, 48 MiB at most; a chain of 4096 rules before the first character
// copies 8M).
constexpr size_t max_expand_positions = size_t(12) << 20;

// nullopt: past the bounds above.
std::optional<stack_set> initial_stacks(const compiled& g);
// The stacks after matching code point cp (empty: cp leaves the grammar; nullopt: past the bounds).
std::optional<stack_set> advance(const compiled& g, const stack_set& from, uint32_t cp);
bool is_complete(const stack_set& s);

bool char_matches(const element& e, uint32_t cp);
// Whether some code point in [lo, hi] matches e (for a character whose first bytes are known).
bool range_may_match(const element& e, uint32_t lo, uint32_t hi);

}  // namespace glia::grammar
