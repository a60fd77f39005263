// glia serve: an OpenAI-compatible HTTP server (see README "Server").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "glia/session.h"

namespace glia::server {

struct server_options {
  session_options session;
  std::string host = "127.0.0.1";
  int port = 8080;              // 0: any free port
  int parallel = 1;             // slots: sequences generated at once
  int max_queue = 64;           // requests waiting for a slot before 503
  int prefill_chunk = 128;      // prompt tokens per scheduler step
  size_t max_body = 8u << 20;   // request body cap in bytes (413 above)
  std::string api_key;          // empty: no key needed
  // Origins whose browser pages may call the API (CORS): "*" for any; empty for none.
  std::vector<std::string> cors_origins = {"*"};
  std::string chat_template;    // empty: the model's
  std::string chat_template_kwargs = "{}";  // JSON object: template variables every request gets
  bool split_reasoning = true;  // --reasoning-format deepseek (the default) or none: see reasoning_split.h
  int reasoning_budget = -1;    // tokens a reply's reasoning may take before it is closed; -1: no limit
  std::string reasoning_budget_message;  // text forced before the close tag when the budget is spent
  bool metrics = false;         // serve GET /metrics
  std::string pooling;          // embeddings: mean, cls or last; empty: the model file's
  int drain_seconds = 60;       // on SIGTERM, how long running requests may take to finish
};

// Loads the model, serves until SIGTERM/SIGINT, drains, and returns the process exit code.
// Prints "glia serve: listening on http://HOST:PORT" on stderr once the model is loaded.
int run_server(const server_options& opts);

}  // namespace glia::server
