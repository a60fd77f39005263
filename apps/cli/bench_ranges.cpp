#include "bench_ranges.h"

#include <charconv>

namespace glia::cli::bench {
namespace {

constexpr size_t k_max_values = 4096;  // a typo such as 1-65536 should not start a day-long run

// Reads a decimal number at the front of `s` and advances past it.
bool take_number(std::string_view& s, long long& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc{} || end == s.data()) return false;
  s.remove_prefix(size_t(end - s.data()));
  return true;
}

}  // namespace

result<std::vector<int>> expand_int_list(std::string_view option, const std::vector<std::string>& items, int lo, int hi) {
  std::vector<int> out;
  for (const std::string& item : items) {
    auto bad = [&](std::string_view why) {
      return make_error("{} '{}': {} (expected N, FIRST-LAST, FIRST-LAST+STEP or FIRST-LAST*MULT)", option, item, why);
    };
    std::string_view s = item;
    long long first = 0, last = 0, step = 1;
    char op = '+';
    if (!take_number(s, first)) return bad("not a number");
    last = first;
    if (!s.empty() && s.front() == '-') {
      s.remove_prefix(1);
      if (!take_number(s, last)) return bad("no number after '-'");
      if (!s.empty() && (s.front() == '+' || s.front() == '*')) {
        op = s.front();
        s.remove_prefix(1);
        if (!take_number(s, step)) return bad(std::string("no number after '") + op + "'");
      }
    }
    if (!s.empty()) return bad("unexpected text after the number");
    if (first < lo || last > hi) return bad(fmt::format("values must be in {}..{}", lo, hi));
    if (last < first) return bad("the range ends before it starts");
    if (op == '+' && step < 1) return bad("the step must be at least 1");
    if (op == '*' && (step < 2 || first < 1)) return bad("the multiplier must be at least 2 and the range start at 1 or more");
    for (long long v = first;;) {
      if (out.size() == k_max_values) return bad(fmt::format("more than {} values", k_max_values));
      out.push_back(int(v));
      // The next value would pass `last` (checked before forming it: a huge step must not overflow).
      if (op == '+' ? step > last - v : v > last / step) break;
      v = op == '+' ? v + step : v * step;
    }
  }
  return out;
}

}  // namespace glia::cli::bench
