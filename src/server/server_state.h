// What the request handlers share: options, the loaded model's scheduler, the chat template,
// sampling defaults, metrics, and the lifecycle flags.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include <httplib.h>

#include "glia/session.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "server/server.h"

namespace glia::server {

struct server_state {
  server_options opts;
  metrics stats;
  std::atomic<bool> ready{false};     // the model is loaded (set once, after everything below)
  std::atomic<bool> draining{false};  // SIGTERM received: new generation requests get 503
  std::atomic<int> in_flight{0};      // generation requests not yet answered completely
  std::unique_ptr<scheduler> sched;
  session::chat_format chat_fmt;
  sampler_params sampling_defaults;
  std::string model_name;  // the file name, as /v1/models reports it

  const session& sess() const { return sched->any_session(); }
};

// Registers the endpoints on `svr`.
void add_generation_routes(httplib::Server& svr, server_state& st);
void add_misc_routes(httplib::Server& svr, server_state& st);

// Writes an OpenAI-shaped error response.
void send_error(httplib::Response& res, const api_error& e);

}  // namespace glia::server
