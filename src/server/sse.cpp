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

void set_event_stream(const httplib::Request& req, httplib::Response& res, httplib::ContentProviderWithoutLength step,
                      httplib::ContentProviderResourceReleaser done) {
  res.set_header("Cache-Control", "no-cache");
  constexpr const char* type = "text/event-stream; charset=utf-8";
  if (req.version == "HTTP/1.0") {
    // A stream without a length ends only with the connection. The library keeps a 1.0 connection
    // that asked for Keep-Alive open; Connection: close has the server's logger shut its reading
    // once the response is written (http_server.cpp), which ends it.
    res.set_header("Connection", "close");
    res.set_content_provider(type, std::move(step), std::move(done));
  } else {
    res.set_chunked_content_provider(type, std::move(step), std::move(done));
  }
}

}  // namespace glia::server
