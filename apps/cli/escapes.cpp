#include "escapes.h"

namespace glia::cli {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string process_escapes(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[i + 1];
    switch (c) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case 'x': {
        const int hi = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1, lo = i + 3 < s.size() ? hex_digit(s[i + 3]) : -1;
        if (hi < 0 || lo < 0) {  // not two hex digits: kept as typed
          out += "\\x";
          break;
        }
        out += char(hi * 16 + lo);
        i += 2;
        break;
      }
      default: out += '\\'; out += c; break;
    }
    ++i;
  }
  return out;
}

}  // namespace glia::cli
