// glia serve: the OpenAI-compatible HTTP server (src/server).
#include <cstdint>

#include "commands.h"
#include "common_options.h"
#include "server/server.h"

namespace glia::cli {

command_fn add_serve(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "serve the model over an OpenAI-compatible (and Anthropic Messages) HTTP API");
  auto o = std::make_shared<server::server_options>();
  add_session_options(cmd, o->session);
  cmd->add_option("--host", o->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", o->port, "port to listen on (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--parallel", o->parallel, "slots: requests generated at the same time, each with a KV cache of -c tokens")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--max-queue", o->max_queue, "requests that may wait for a slot; more get 503")->check(CLI::Range(0, 4096))->capture_default_str();
  cmd->add_option("--prefill-chunk", o->prefill_chunk, "prompt tokens evaluated per scheduler step")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--max-body", o->max_body, "largest request body in bytes (413 above)")->check(CLI::Range(size_t(1024), size_t(1) << 34))->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' (or 'x-api-key: KEY') on every endpoint but /health");
  cmd->add_option_function<std::vector<std::string>>(
         "--cors-origin",
         [o](const std::vector<std::string>& v) {
           o->cors_origins = v;
           if (v.size() == 1 && v[0] == "none") o->cors_origins.clear();
         },
         "origin whose browser pages may call the API (CORS; repeatable): * (the default: any), or none")
      ->type_name("ORIGIN")
      ->take_all();
  cmd->add_option("--chat-template", o->chat_template, "built-in template (chatml, llama3, gemma, mistral) or a Jinja file");
  cmd->add_option("--chat-template-kwargs", o->chat_template_kwargs,
                  "JSON object of template variables for every request, e.g. '{\"enable_thinking\": false}' (a request's own chat_template_kwargs win)");
  cmd->add_option_function<std::string>(
         "--reasoning-format",
         [o](const std::string& v) { o->split_reasoning = v != "none"; },
         "a reasoning model's <think> text: deepseek (the default; auto is the same) returns it as reasoning_content, none leaves it in content")
      ->check(CLI::IsMember({"none", "deepseek", "auto"}))
      ->type_name("FORMAT");
  // A request's thinking_budget_tokens, thinking_token_budget or Anthropic thinking.budget_tokens wins.
  add_reasoning_budget_options(cmd, o->reasoning_budget, o->reasoning_budget_message, "per reply");
  cmd->add_flag("--metrics", o->metrics, "serve Prometheus metrics on GET /metrics");
  cmd->add_option("--pooling", o->pooling,
                  "how /v1/embeddings pools the final hidden states: mean, cls (the first token's) or last (default: the model "
                  "file's pooling_type, else last)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  cmd->add_option("--drain-seconds", o->drain_seconds, "on SIGTERM, how long running requests may take to finish")->check(CLI::Range(0, 3600))->capture_default_str();
  return [o]() { return server::run_server(*o); };
}

}  // namespace glia::cli
