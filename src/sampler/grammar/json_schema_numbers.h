// GBNF for bounded JSON numbers: the canonical decimal spellings of the integers in a range, and the
// fixed-point decimals (no exponent) between integer bounds.
#pragma once

#include <optional>
#include <string>

namespace glia::grammar {

using int128 = __int128;

// Integers are written with at most this many digits (all 64-bit values fit), so a model cannot
// spin on digits for ever; a bound past it is clamped there (which only leaves values out).
inline constexpr int max_integer_digits = 20;
int128 max_integer_magnitude();  // 10^20 - 1
// A side the schema leaves open takes at most this many: every such integer is exact in a double and
// in JavaScript, and fits int64 (20 digits would let a model write 63333333333333333333, which a
// client decoding into int64 refuses). A bound past it is honoured up to max_integer_digits.
inline constexpr int open_integer_digits = 15;
int128 open_integer_magnitude();  // 10^15 - 1
// Where a side the schema leaves open ends, given the bound on the other side, counted away from
// it (nullopt: none): 15 digits, or up to three more digits than a larger bound has, within int64
// (and never short of the bound itself), so that a large bound leaves room but no cliff.
int128 open_integer_end(std::optional<int128> other_bound);
// A number's integer part, likewise (bounds on numbers are at most 2^53, 16 digits).
inline constexpr int number_integer_digits = 16;

std::string int128_to_string(int128 v);

// The integers in [lo, hi] (lo <= hi, both within +-max_integer_magnitude()), written as JSON does:
// no leading zeros, a minus sign for negatives, no "-0". Alternatives, not parenthesised.
std::string integer_range_expr(int128 lo, int128 hi);

struct number_bound {
  int128 value = 0;
  bool exclusive = false;
};

// Decimals "I" or "I.F" (optionally negative; no exponent) x with lo <(=) x <(=) hi, for integer
// bounds. F has at most `max_fraction_digits` digits. Empty when no such number exists.
std::string decimal_range_expr(const std::optional<number_bound>& lo, const std::optional<number_bound>& hi,
                               int max_fraction_digits);

}  // namespace glia::grammar
