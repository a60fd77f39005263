#include "server/request_gate.h"

#include <fmt/core.h>
#include <strings.h>

#include <algorithm>
#include <set>

#include "server/auth.h"

namespace glia::server {
namespace {

// A Content-Length that is digits only (the library reads anything else as 0 or as a huge length).
bool is_decimal(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// A decimal Content-Length above the cap.
bool body_too_large(const std::string& len, size_t cap) { return len.size() > 18 || std::stoull(len) > cap; }

// CORS: a request from an allowed origin gets Access-Control-Allow-Origin on its response, and a
// preflight (OPTIONS with Access-Control-Request-Method) to a known path is answered here, before
// the key check, since browsers send preflights without credentials. True when it was answered.
bool answer_cors(const server_state& st, const httplib::Request& req, httplib::Response& res) {
  const auto& origins = st.opts.cors_origins;
  const bool any = std::find(origins.begin(), origins.end(), "*") != origins.end();
  // With a list of origins the answer depends on the Origin header: shared caches must know.
  if (!any && !origins.empty()) res.set_header("Vary", "Origin");
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty()) return false;
  if (!any && std::find(origins.begin(), origins.end(), origin) == origins.end()) return false;
  res.set_header("Access-Control-Allow-Origin", any ? "*" : origin);
  if (req.method != "OPTIONS" || !req.has_header("Access-Control-Request-Method") || !st.endpoint_method(req.path))
    return false;
  // 200 rather than 204: the HTTP library puts a Content-Length on every response, which a 204
  // must not carry; browsers accept either.
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  res.status = 200;
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
  res.set_header("Access-Control-Max-Age", "86400");
  return true;
}

// Refused framings of a body, answered before the library would read it: a chunked body (no length
// to check up front), Content-Length headers that differ, a Content-Length that is not a number, no length on a method that carries a
// body (RFC 9112 6.3 makes it empty, but the library would wait for one until its 30 s read
// timeout, holding a handler thread), a length over the cap, and multipart bodies (the routes read
// plain bodies). Returns whether it answered.
bool refuse_body_framing(const server_state& st, const httplib::Request& req, httplib::Response& res) {
  const auto refuse = [&req, &res](api_error e) {
    res.set_header("Connection", "close");
    send_error_for(req, res, e);
    return true;
  };
  if (req.has_header("Transfer-Encoding"))
    return refuse(api_error{411, "request bodies must have a Content-Length (no Transfer-Encoding)"});
  const std::string len = req.get_header_value("Content-Length");
  // Two lengths (RFC 9112 6.3: unrecoverable): the library reads by the first; a proxy in front that
  // took another would see a different request boundary (request smuggling).
  for (size_t i = 1; i < req.get_header_value_count("Content-Length"); ++i)
    if (req.get_header_value("Content-Length", i) != len) return refuse(api_error{400, "the request has two different Content-Length headers"});
  if (req.has_header("Content-Length") && !is_decimal(len))
    return refuse(api_error{400, fmt::format("Content-Length '{}' is not a number of bytes", len.substr(0, 32))});
  const bool carries_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
  if (len.empty() && carries_body) {
    const std::string* known = st.endpoint_method(req.path);
    if (known && *known == req.method) return refuse(api_error{411, "request bodies must have a Content-Length"});
    res.set_header("Connection", "close");
    send_unrouted(st, req, res);
    return true;
  }
  if (!len.empty() && body_too_large(len, st.opts.max_body))
    return refuse(api_error{413, fmt::format("the request body has {} bytes, the limit is {}", len, st.opts.max_body)});
  // The HTTP library would inflate a compressed body in memory with no bound: 8 MiB of gzip can
  // stand for gigabytes. Clients send JSON as it is (as they do to vLLM, which reads no encoding).
  if (const std::string enc = req.get_header_value("Content-Encoding"); !enc.empty() && strcasecmp(enc.c_str(), "identity") != 0)
    return refuse(api_error{415, fmt::format("compressed request bodies (Content-Encoding: {}) are not accepted; send the JSON as it is",
                                             enc.substr(0, 32))});
  if (req.get_header_value("Content-Type").starts_with("multipart/"))
    return refuse(api_error{415, "multipart bodies are not accepted; send JSON (Content-Type: application/json)"});
  return false;
}

}  // namespace

void send_unrouted(const server_state& st, const httplib::Request& req, httplib::Response& res) {
  const std::string* known = st.endpoint_method(req.path);
  if (!known) return send_error_for(req, res, api_error{404, "no such endpoint"});
  res.set_header("Allow", *known);
  send_error_for(req, res, api_error{405, fmt::format("{} takes {} requests", req.path, *known)});
}

// The key comes as OpenAI's clients send it, or in x-api-key as Anthropic's do. Returns whether it
// answered (401).
bool refuse_unauthorized(const server_state& st, const httplib::Request& req, httplib::Response& res) {
  if (req.path == "/health" || st.opts.api_key.empty() || bearer_matches(req.get_header_value("Authorization"), st.opts.api_key) ||
      (req.has_header("x-api-key") && constant_time_equal(req.get_header_value("x-api-key"), st.opts.api_key)))
    return false;
  res.set_header("WWW-Authenticate", "Bearer");
  api_error e{401, "invalid or missing API key (Authorization: Bearer KEY, or x-api-key: KEY)"};
  e.code = "invalid_api_key";
  res.set_header("Connection", "close");  // its body is never read
  send_error_for(req, res, e);
  return true;
}

httplib::Server::HandlerResponse pre_route(server_state& st, const httplib::Request& req, httplib::Response& res) {
  static const std::set<std::string> generation_paths = {"/v1/chat/completions", "/chat/completions", "/v1/completions", "/completion",
                                                        "/completions",         "/infill",           "/v1/messages",    "/v1/responses"};
  if (!generation_paths.contains(req.path))
    st.stats.requests_other++;
  if (answer_cors(st, req, res)) return httplib::Server::HandlerResponse::Handled;
  if (refuse_unauthorized(st, req, res) || refuse_body_framing(st, req, res)) return httplib::Server::HandlerResponse::Handled;
  return httplib::Server::HandlerResponse::Unhandled;
}

int expect_continue(const server_state& st, const httplib::Request& req, httplib::Response& res) {
  if (refuse_unauthorized(st, req, res) || refuse_body_framing(st, req, res)) return res.status;
  return 100;
}

}  // namespace glia::server
