// What is decided about a request before its body is read (cpp-httplib's pre-routing handler):
// CORS preflights, the API key, and the framing and size of the body.
#pragma once

#include <httplib.h>

#include "server/server_state.h"

namespace glia::server {

// Handled: the response is written and no body byte has been read; Unhandled: route the request.
httplib::Server::HandlerResponse pre_route(server_state& st, const httplib::Request& req, httplib::Response& res);

// A client that sends "Expect: 100-continue" waits for a go before its body: 100, or the status of
// the refusal (a bad key, a body too large or framed wrongly) written into res, so that it never
// uploads a body that would be refused.
int expect_continue(const server_state& st, const httplib::Request& req, httplib::Response& res);

// The answer to a request no route takes: 405 naming the method where the path is known (it was
// asked with another), else 404.
void send_unrouted(const server_state& st, const httplib::Request& req, httplib::Response& res);

}  // namespace glia::server
