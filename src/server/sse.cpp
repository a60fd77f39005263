#include "server/sse.h"

#include <sys/socket.h>

#include "server/connection.h"

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
    res.set_header("Connection", "close");
    // The library keeps a 1.0 connection that asked for Keep-Alive open after the response, and a
    // stream without a length ends only with the connection: shut the socket once it is written.
    const int fd = find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    res.set_content_provider(type, std::move(step), [done = std::move(done), fd](bool success) {
      done(success);
      if (fd >= 0) shutdown(fd, SHUT_RDWR);
    });
  } else {
    res.set_chunked_content_provider(type, std::move(step), std::move(done));
  }
}

}  // namespace glia::server
