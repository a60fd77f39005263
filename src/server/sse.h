// Server-Sent Events framing (https://html.spec.whatwg.org/multipage/server-sent-events.html): each
// event is "data: <one line of JSON>\n\n"; an OpenAI stream ends with "data: [DONE]\n\n".
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <httplib.h>

namespace glia::server {

// `json_line` must not contain a newline (nlohmann's compact dump() never does).
std::string sse_data(std::string_view json_line);
inline constexpr std::string_view sse_done = "data: [DONE]\n\n";
// A comment line, which clients skip: keeps proxies from timing out a stream that is quiet for long.
inline constexpr std::string_view sse_keep_alive = ": keep-alive\n\n";
// Proxies drop streams that are quiet for long: a stream sends a keep-alive after this long without a write.
inline constexpr auto sse_keep_alive_interval = std::chrono::seconds(10);

// Sets `res` to stream events from `step` (called until it returns false or the client leaves) and
// calls `done(success)` once it has ended: chunked for HTTP/1.1, and for an HTTP/1.0 client (which
// knows no chunks: ApacheBench, nginx's default proxy_http_version) the bytes as they are, the end of
// the connection ending the stream.
void set_event_stream(const httplib::Request& req, httplib::Response& res, httplib::ContentProviderWithoutLength step,
                      httplib::ContentProviderResourceReleaser done);

}  // namespace glia::server
