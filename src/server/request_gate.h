// What is decided about a request before its body is read (cpp-httplib's pre-routing handler):
// CORS preflights, the API key, and the framing and size of the body.
#pragma once

#include <string>

#include <httplib.h>

#include "server/server_state.h"

namespace glia::server {

// Handled: the response is written and no body byte has been read; Unhandled: route the request.
httplib::Server::HandlerResponse pre_route(server_state& st, const httplib::Request& req, httplib::Response& res);

// 405 for a known path asked with another method, naming the one it takes.
void send_method_not_allowed(httplib::Response& res, const std::string& path, const std::string& method);

}  // namespace glia::server
