#include "decimal_numbers.h"

#include <algorithm>
#include <string>
#include <string_view>

namespace glia::cli {
namespace {

// "-007" -> "-7"; anything but an optional sign and decimal digits is refused (CLI11's validator
// form: the error message, or empty after rewriting the value in place).
std::string decimal_integer(std::string& s) {
  if (s.empty()) return "a number is required, got an empty value";
  const size_t sign = s[0] == '-' || s[0] == '+' ? 1 : 0;
  if (s.size() == sign || s.find_first_not_of("0123456789", sign) != std::string::npos)
    return "'" + s + "' is not a decimal integer";
  const size_t first = std::min(s.find_first_not_of('0', sign), s.size() - 1);
  s = s.substr(0, sign) + s.substr(first);
  return {};
}

std::string non_empty(std::string& s) { return s.empty() ? "a number is required, got an empty value" : std::string(); }

void apply(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    const std::string type = opt->get_type_name();
    const std::string_view base = std::string_view(type).substr(0, type.find(':'));
    if (base == "INT" || base == "UINT") opt->transform(CLI::Validator(decimal_integer, "", "decimal"));
    else if (base == "FLOAT") opt->transform(CLI::Validator(non_empty, "", "non-empty"));
  }
  for (CLI::App* sub : app.get_subcommands({})) apply(*sub);
}

}  // namespace

void make_numbers_decimal(CLI::App& app) { apply(app); }

}  // namespace glia::cli
