#include "sampler/grammar/json_schema_numbers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace glia::grammar {
namespace numbers_detail {
namespace {

std::string join_alts(const std::vector<std::string>& alts) {
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

std::string grouped(const std::string& e) {
  return e.find('|') == std::string::npos ? e : "(" + e + ")";
}

std::string digits_literal(std::string_view digits) { return "\"" + std::string(digits) + "\""; }

std::string any_digits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return fmt::format("[0-9]{{{}}}", n);
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return digits_literal(std::string(1, lo));
  return fmt::format("[{}-{}]", lo, hi);
}

std::string concat(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Digit strings of the same length n from lo to hi inclusive (lo <= hi): a shared prefix, then one
// alternative that follows lo's remaining digits upward, the free middle, and one that follows hi's.
std::string same_length_range(std::string_view lo, std::string_view hi) {
  if (lo.empty()) return "";
  if (lo == hi) return digits_literal(lo);
  if (lo[0] == hi[0]) return concat(digits_literal(lo.substr(0, 1)), grouped(same_length_range(lo.substr(1), hi.substr(1))));
  const size_t rest = lo.size() - 1;
  const bool lo_tail_min = lo.find_first_not_of('0', 1) == std::string_view::npos;
  const bool hi_tail_max = hi.find_first_not_of('9', 1) == std::string_view::npos;
  std::vector<std::string> alts;
  char first = lo[0], last = hi[0];
  if (!lo_tail_min) {
    alts.push_back(concat(digits_literal(lo.substr(0, 1)), grouped(same_length_range(lo.substr(1), std::string(rest, '9')))));
    ++first;
  }
  if (!hi_tail_max) --last;
  if (first <= last) alts.push_back(concat(digit_class(first, last), any_digits(rest)));
  if (!hi_tail_max)
    alts.push_back(concat(digits_literal(hi.substr(0, 1)), grouped(same_length_range(std::string(rest, '0'), hi.substr(1)))));
  return join_alts(alts);
}

int128 pow10(int n) {
  int128 v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

// Positive integers a..b (1 <= a <= b), split by digit count.
std::string positive_range(int128 a, int128 b) {
  std::vector<std::string> alts;
  const int len_a = int(int128_to_string(a).size()), len_b = int(int128_to_string(b).size());
  for (int len = len_a; len <= len_b; ++len) {
    const int128 lo = std::max(a, pow10(len - 1)), hi = std::min(b, pow10(len) - 1);
    alts.push_back(same_length_range(int128_to_string(lo), int128_to_string(hi)));
  }
  return join_alts(alts);
}

// Unsigned decimals m = I.F with a <(=) m and m <(=) b (when b is given), integers 0 <= a.
std::string nonnegative_decimals(number_bound a, std::optional<number_bound> b, int k) {
  std::vector<std::string> alts;
  const std::string any_fraction = fmt::format("(\".\" [0-9]{{1,{}}})?", k);
  const int128 int_lo = a.value + (a.exclusive ? 1 : 0);
  const int128 int_hi = b ? b->value - 1 : pow10(number_integer_digits) - 1;
  if (int_lo <= int_hi) alts.push_back(grouped(integer_range_expr(int_lo, int_hi)) + " " + any_fraction);
  if (b && !b->exclusive && (b->value > a.value || (b->value == a.value && !a.exclusive)))
    alts.push_back(fmt::format("\"{}\" (\".\" \"0\"{{1,{}}})?", int128_to_string(b->value), k));
  // Just above an exclusive lower bound: a nonzero fraction, written without trailing zeros.
  if (a.exclusive && (!b || b->value > a.value))
    alts.push_back(fmt::format("\"{}\" \".\" [0-9]{{0,{}}} [1-9]", int128_to_string(a.value), k - 1));
  return join_alts(alts);
}

}  // namespace
}  // namespace numbers_detail

int128 max_integer_magnitude() { return numbers_detail::pow10(max_integer_digits) - 1; }
int128 open_integer_magnitude() { return numbers_detail::pow10(open_integer_digits) - 1; }

int128 open_integer_end(std::optional<int128> other) {
  const int128 open = open_integer_magnitude();
  if (!other || *other <= 0) return open;
  return std::max({open, std::min<int128>(*other * 1000, int128(INT64_MAX)), *other});
}

std::string int128_to_string(int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  std::string out;
  // Digits from the magnitude, taken digit by digit so the most negative value needs no negation.
  while (v != 0) {
    const int digit = int(v % 10);
    out += char('0' + (digit < 0 ? -digit : digit));
    v /= 10;
  }
  if (negative) out += '-';
  std::reverse(out.begin(), out.end());
  return out;
}

std::string integer_range_expr(int128 lo, int128 hi) {
  using numbers_detail::grouped;
  using numbers_detail::positive_range;
  using numbers_detail::join_alts;
  std::vector<std::string> alts;
  if (lo < 0) {
    const int128 mag_lo = hi < 0 ? -hi : 1, mag_hi = -lo;
    alts.push_back("\"-\" " + grouped(positive_range(mag_lo, mag_hi)));
  }
  if (lo <= 0 && hi >= 0) alts.push_back("\"0\"");
  if (hi > 0) alts.push_back(positive_range(std::max<int128>(lo, 1), hi));
  return join_alts(alts);
}

std::string decimal_range_expr(const std::optional<number_bound>& lo, const std::optional<number_bound>& hi,
                               int max_fraction_digits) {
  using numbers_detail::grouped;
  using numbers_detail::nonnegative_decimals;
  using numbers_detail::join_alts;
  std::vector<std::string> alts;
  // Negative side: x = -m with m > 0, -hi <(=) m <(=) -lo.
  if (!lo || lo->value < 0) {
    number_bound m_lo{0, true};
    if (hi && -hi->value > 0) m_lo = {-hi->value, hi->exclusive};
    std::optional<number_bound> m_hi;
    if (lo) m_hi = number_bound{-lo->value, lo->exclusive};
    const std::string side = nonnegative_decimals(m_lo, m_hi, max_fraction_digits);
    if (!side.empty()) alts.push_back("\"-\" " + grouped(side));
  }
  // Non-negative side.
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    number_bound a{0, false};
    if (lo && lo->value >= 0) a = *lo;
    const std::string side = nonnegative_decimals(a, hi, max_fraction_digits);
    if (!side.empty()) alts.push_back(side);
  }
  return join_alts(alts);
}

}  // namespace glia::grammar
