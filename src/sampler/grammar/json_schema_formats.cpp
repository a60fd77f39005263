#include "sampler/grammar/json_schema_formats.h"

#include <algorithm>

namespace glia::grammar {

// Dates are checked as Python's date.fromisoformat and RFC 3339 check them: years 0001-9999, each
// month's own length, 29 February in leap years only (divisible by 4, centuries by 400). Times need
// an offset (RFC 3339's full-time); seconds stop at 59 and fractions at 9 digits (a subset), and the
// T and Z separators are upper case.
const std::vector<gbnf_rule_text>& format_rules() {
  static const std::vector<gbnf_rule_text> rules = {
      {"date",
       "date-year \"-\" ( date-month-31 \"-\" date-day-31 | date-month-30 \"-\" date-day-30 | \"02-\" date-day-28 )"
       " | date-leap-year \"-02-29\"",
       {"date-year", "date-leap-year", "date-month-31", "date-month-30", "date-day-31", "date-day-30", "date-day-28"}},
      {"date-year", "[1-9] [0-9]{3} | \"0\" [1-9] [0-9]{2} | \"00\" [1-9] [0-9] | \"000\" [1-9]", {}},
      {"date-leap-year",
       "[0-9]{2} ( \"0\" [48] | [2468] [048] | [13579] [26] ) | ( \"0\" [48] | [2468] [048] | [13579] [26] ) \"00\"",
       {}},
      {"date-month-31", "\"0\" [13578] | \"1\" [02]", {}},
      {"date-month-30", "\"0\" [469] | \"11\"", {}},
      {"date-day-31", "\"0\" [1-9] | [12] [0-9] | \"3\" [01]", {}},
      {"date-day-30", "\"0\" [1-9] | [12] [0-9] | \"30\"", {}},
      {"date-day-28", "\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]", {}},
      {"time",
       "time-hour \":\" time-minute \":\" time-minute ( \".\" [0-9]{1,9} )? ( \"Z\" | [+-] time-hour \":\" time-minute )",
       {"time-hour", "time-minute"}},
      {"time-hour", "[01] [0-9] | \"2\" [0-3]", {}},
      {"time-minute", "[0-5] [0-9]", {}},
      {"date-time", "date \"T\" time", {"date", "time"}},
      {"uuid",
       "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}",
       {}},
  };
  return rules;
}

std::pair<uint64_t, uint64_t> format_length_range(std::string_view format) {
  // time: HH:MM:SS, up to 10 for a fraction, then Z (1) or +HH:MM (6).
  if (format == "date") return {10, 10};
  if (format == "time") return {9, 24};
  if (format == "date-time") return {20, 35};
  return {36, 36};  // uuid
}

bool is_supported_format(std::string_view format) {
  return format == "date" || format == "time" || format == "date-time" || format == "uuid";
}

}  // namespace glia::grammar
