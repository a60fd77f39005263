#include "decimal_numbers.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace glia::cli {
namespace {

constexpr const char* k_empty = "a number is required, got an empty value";

// "-007" -> "-7"; anything but an optional sign (none for an unsigned option: strtoull would wrap
// "-5" around) and decimal digits is refused. CLI11's validator form: the error message, or empty
// after rewriting the value in place.
std::string decimal_integer(std::string& s, bool is_signed) {
  if (s.empty()) return k_empty;
  const size_t sign = s[0] == '-' || s[0] == '+' ? 1 : 0;
  if (s.size() == sign || s.find_first_not_of("0123456789", sign) != std::string::npos || (!is_signed && s[0] == '-'))
    return "'" + s + "' is not a decimal " + (is_signed ? "integer" : "count");
  const size_t first = std::min(s.find_first_not_of('0', sign), s.size() - 1);
  s = s.substr(0, sign) + s.substr(first);
  return {};
}

// strtold takes hex floats ("0x1p-1"); the rest it reads as decimal.
std::string decimal_real(std::string& s) {
  if (s.empty()) return k_empty;
  if (s.find_first_of("xX") != std::string::npos) return "'" + s + "' is not a decimal number";
  return {};
}

}  // namespace

void make_numbers_decimal(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    const std::string_view base = std::string_view(type).substr(0, type.find(':'));
    if (base == "INT" || base == "UINT") {
      const bool is_signed = base == "INT";
      opt->transform(CLI::Validator([is_signed](std::string& s) { return decimal_integer(s, is_signed); }, "", "decimal"));
    } else if (base == "FLOAT") {
      opt->transform(CLI::Validator(decimal_real, "", "decimal"));
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) make_numbers_decimal(*sub);
}

}  // namespace glia::cli
