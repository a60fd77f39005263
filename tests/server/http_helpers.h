// Small HTTP helpers for the server tests: JSON posts, SSE parsing, and raw-socket requests (for
// disconnects and malformed HTTP that a client library would not send).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server_process.h"

namespace glia::test {

struct http_reply {
  int status = 0;  // 0: no response (connection failed)
  std::string body;
  httplib::Headers headers;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

http_reply get(const server_process& s, const std::string& path, const std::string& api_key = {});
http_reply post(const server_process& s, const std::string& path, const std::string& body, const std::string& api_key = {});
// A JSON post with these headers (x-api-key, anthropic-version, ...).
http_reply post_with_headers(const server_process& s, const std::string& path, const std::string& body, const httplib::Headers& headers);
inline http_reply post(const server_process& s, const std::string& path, const nlohmann::json& body) {
  return post(s, path, body.dump());
}

// The "data:" payloads of an SSE body, in order ("[DONE]" included as is).
std::vector<std::string> sse_payloads(const std::string& body);
// The text of a streamed chat or completion (concatenated deltas), and whether it ended properly.
struct stream_result {
  std::string text;
  std::string finish_reason;
  bool done = false;       // ended with data: [DONE]
  bool well_formed = true;  // every payload parsed, one id throughout
  nlohmann::json usage;
  std::vector<nlohmann::json> chunks;
};
stream_result parse_stream(const std::string& body, bool chat);

// A connected socket with `request` sent as is; -1 on failure.
int send_raw(const server_process& s, const std::string& request);
// A POST with a JSON body and its Content-Length, as raw bytes.
std::string post_request(const std::string& path, const std::string& body);
// What the server sends back on fd within timeout_ms: until the connection closes or a whole
// response (headers, then Content-Length bytes of body) has arrived; closes fd.
std::string read_raw_reply(int fd, int timeout_ms);

// Greedy completion text of `prompt` (non-streaming).
std::string complete_greedy(const server_process& s, const std::string& prompt, int max_tokens);

}  // namespace glia::test
