#include "server/sse.h"

namespace glia::server {

std::string sse_data(std::string_view json_line) {
  std::string out;
  out.reserve(json_line.size() + 8);
  out += "data: ";
  out += json_line;
  out += "\n\n";
  return out;
}

}  // namespace glia::server
