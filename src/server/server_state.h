// What the request handlers share: options, the loaded model's scheduler, the chat template,
// sampling defaults, metrics, and the lifecycle flags.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <httplib.h>

#include "glia/session.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "server/server.h"
#include "server/served_template.h"

namespace glia::server {

struct server_state {
  server_options opts;
  metrics stats;
  std::atomic<bool> ready{false};     // the model is loaded (set once, after everything below)
  std::atomic<bool> draining{false};  // SIGTERM received: new generation requests get 503
  std::atomic<int> in_flight{0};      // generation requests not yet answered completely
  std::unique_ptr<scheduler> sched;
  served_template chat_fmt;
  // For requests with tools: the model's "tool_use" template when it has one, else chat_fmt.
  served_template tool_chat_fmt;
  nlohmann::json template_kwargs = nlohmann::json::object();  // --chat-template-kwargs; a request's own win
  sampler_params sampling_defaults;
  std::string model_name;  // the file name, as /v1/models reports it
  std::optional<session::pooling> pooling;  // --pooling; unset: the model file's (session::embedding_pooling)
  int64_t model_loaded_at = 0;  // Unix seconds: /v1/models' "created" (llama-server reports the same)
  // Method of every registered endpoint (filled by add_route, read-only once serving): a known path
  // asked with another method gets 405 naming this one.
  std::map<std::string, std::string> endpoint_methods;
  // The same for endpoints with an id in the path (GET /v1/models/{id}), by the prefix before it.
  std::map<std::string, std::string> endpoint_prefix_methods;
  // The method of the endpoint at `path`, or null when there is none.
  const std::string* endpoint_method(const std::string& path) const {
    if (auto it = endpoint_methods.find(path); it != endpoint_methods.end()) return &it->second;
    for (const auto& [prefix, method] : endpoint_prefix_methods)
      if (path.size() > prefix.size() && path.starts_with(prefix)) return &method;
    return nullptr;
  }

  const session& sess() const { return sched->any_session(); }
};

// Counts a request that uses the engine as in flight until its response has been written (or
// abandoned), so SIGTERM can wait for it.
struct in_flight_guard {
  explicit in_flight_guard(server_state& s) : st(s) { st.in_flight++; }
  ~in_flight_guard() { st.in_flight--; }
  in_flight_guard(const in_flight_guard&) = delete;
  in_flight_guard& operator=(const in_flight_guard&) = delete;
  server_state& st;
};

// Registers `handler` for `method` ("GET" or "POST") on `path` and records the method.
void add_route(httplib::Server& svr, server_state& st, const std::string& method, const std::string& path,
               httplib::Server::Handler handler);

// Registers the endpoints on `svr` (through add_route).
void add_generation_routes(httplib::Server& svr, server_state& st);
void add_misc_routes(httplib::Server& svr, server_state& st);
void add_embedding_routes(httplib::Server& svr, server_state& st);
void add_messages_routes(httplib::Server& svr, server_state& st);
void add_responses_api_routes(httplib::Server& svr, server_state& st);
void add_native_routes(httplib::Server& svr, server_state& st);

// Writes an OpenAI-shaped error response.
void send_error(httplib::Response& res, const api_error& e);
// The same in the shape the request's API uses (Anthropic's for the Messages API's paths).
void send_error_for(const httplib::Request& req, httplib::Response& res, const api_error& e);

}  // namespace glia::server
