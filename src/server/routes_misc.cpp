// GET /health, GET /v1/models(/{id}), GET /metrics, POST /tokenize, POST /detokenize.
#include <fmt/core.h>

#include <ctime>

#include "core/json_text.h"
#include "server/anthropic_responses.h"
#include "server/request.h"
#include "server/request_fields.h"
#include "server/responses.h"
#include "server/server_state.h"
#include "tokenizer/utf8.h"

namespace glia::server {

using nlohmann::json;

void send_error(httplib::Response& res, const api_error& e) {
  res.status = e.status;
  res.set_content(e.to_json(), "application/json");
}

void send_error_for(const httplib::Request& req, httplib::Response& res, const api_error& e) {
  if (!is_anthropic_path(req.path)) return send_error(res, e);
  res.status = e.status;
  res.set_content(anthropic_error_json(e), "application/json");
}

namespace {

std::string rfc3339_utc(int64_t unix_seconds) {
  const std::time_t t = std::time_t(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool require_ready(server_state& st, httplib::Response& res) {
  if (st.ready.load()) return true;
  res.set_header("Retry-After", "1");
  send_error(res, api_error{503, "the model is still loading"});
  return false;
}

void tokenize(server_state& st, const httplib::Request& req, httplib::Response& res) {
  auto body = parse_json_object(req.body);
  if (!body.ok()) return send_error(res, body.error());
  // llama-server's endpoint: fields it does not read (a client's "model") are ignored, as there.
  const json& obj = body.value();
  std::optional<std::string> content;
  std::optional<bool> add_special, parse_special, with_pieces;
  if (auto e = read_string(obj, "content", content)) return send_error(res, *e);
  if (!content) return send_error(res, bad_request("'content' is required", "content"));
  if (auto e = read_bool(obj, "add_special", add_special)) return send_error(res, *e);
  if (auto e = read_bool(obj, "parse_special", parse_special)) return send_error(res, *e);
  if (auto e = read_bool(obj, "with_pieces", with_pieces)) return send_error(res, *e);
  // llama-server's defaults: no BOS, special-token text is the token (as the completion routes read a prompt).
  auto ids = st.sess().tokenize(*content, add_special.value_or(false), parse_special.value_or(true));
  if (!ids) return send_error(res, bad_request(ids.message(), "content"));
  if (!with_pieces.value_or(false)) return res.set_content(json_text({{"tokens", *ids}}), "application/json");
  // Each token with its text; a piece that is not whole UTF-8 (part of a character) as its bytes.
  json tokens = json::array();
  for (int32_t id : *ids) {
    const std::string piece = st.sess().token_text(id);
    json shown_piece = piece;
    if (!tok::is_valid_utf8(piece)) shown_piece = std::vector<uint8_t>(piece.begin(), piece.end());
    tokens.push_back({{"id", id}, {"piece", shown_piece}});
  }
  res.set_content(json_text({{"tokens", tokens}}), "application/json");
}

void detokenize(server_state& st, const httplib::Request& req, httplib::Response& res) {
  auto body = parse_json_object(req.body);
  if (!body.ok()) return send_error(res, body.error());
  const json& obj = body.value();
  auto it = obj.find("tokens");
  if (it == obj.end() || !it->is_array()) return send_error(res, bad_request("'tokens' must be an array of token ids", "tokens"));
  std::vector<int32_t> ids;
  const int n_vocab = st.sess().n_vocab();
  for (const auto& t : *it) {
    if (!t.is_number_integer())
      return send_error(res, bad_request(fmt::format("token ids must be integers, got {}", t.is_number() ? t.dump() : json_type_name(t)), "tokens"));
    if (t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
      return send_error(res, bad_request(fmt::format("token id {} is outside the vocabulary (0..{})", t.dump(), n_vocab - 1), "tokens"));
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  // Control tokens as their text, as llama-server and `glia detokenize` show them.
  res.set_content(json_text({{"content", st.sess().detokenize(ids, true)}}), "application/json");
}

}  // namespace

void add_misc_routes(httplib::Server& svr, server_state& st) {
  const auto health = [&st](const httplib::Request&, httplib::Response& res) {
    if (!st.ready.load()) {
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content(R"({"status":"loading"})", "application/json");
      return;
    }
    if (st.draining.load()) {  // SIGTERM: tell load balancers to stop sending before we stop listening
      res.status = 503;
      res.set_content(R"({"status":"shutting down"})", "application/json");
      return;
    }
    res.set_content(R"({"status":"ok"})", "application/json");
  };
  add_route(svr, st, "GET", "/health", health);
  add_route(svr, st, "GET", "/v1/health", health);  // llama-server's other spelling
  // OpenAI's model object and Anthropic's in one (each SDK reads its own fields): the same path
  // serves both.
  auto model_json = [&st] {
    return json{{"id", st.model_name},      {"object", "model"},        {"created", st.model_loaded_at},
                {"owned_by", "glia"},       {"type", "model"},          {"display_name", st.model_name},
                {"created_at", rfc3339_utc(st.model_loaded_at)}};
  };
  const auto models = [&st, model_json](const httplib::Request&, httplib::Response& res) {
    if (!require_ready(st, res)) return;
    res.set_content(json_text({{"object", "list"},
                               {"data", json::array({model_json()})},
                               {"has_more", false},
                               {"first_id", st.model_name},
                               {"last_id", st.model_name}}),
                    "application/json");
  };
  add_route(svr, st, "GET", "/v1/models", models);
  add_route(svr, st, "GET", "/models", models);
  // GET /v1/models/{id} (the SDKs' models.retrieve): the served model, or OpenAI's 404 for any other.
  st.endpoint_prefix_methods["/v1/models/"] = "GET";
  svr.Get(R"(/v1/models/(.+))", [&st, model_json](const httplib::Request& req, httplib::Response& res) {
    if (!require_ready(st, res)) return;
    const std::string id = req.matches[1];
    if (id != st.model_name) {
      api_error e{404, fmt::format("the model '{}' does not exist (this server serves '{}')", shown(id), st.model_name), "model"};
      e.code = "model_not_found";
      return send_error(res, e);
    }
    res.set_content(json_text(model_json()), "application/json");
  });
  add_route(svr, st, "GET", "/metrics", [&st](const httplib::Request&, httplib::Response& res) {
    if (!st.opts.metrics) return send_error(res, api_error{404, "metrics are off; start the server with --metrics"});
    gauges g;
    if (st.ready.load()) g = st.sched->snapshot();
    res.set_content(st.stats.render(g), "text/plain; version=0.0.4");
  });
  add_route(svr, st, "POST", "/tokenize", [&st](const httplib::Request& req, httplib::Response& res) {
    if (require_ready(st, res)) tokenize(st, req, res);
  });
  add_route(svr, st, "POST", "/detokenize", [&st](const httplib::Request& req, httplib::Response& res) {
    if (require_ready(st, res)) detokenize(st, req, res);
  });
}

}  // namespace glia::server
