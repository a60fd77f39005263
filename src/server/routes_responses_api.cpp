// POST /v1/responses: OpenAI's Responses API over the same engine as the chat endpoint
// (server/responses_api_request.h says how a request maps onto it); the reply read as the chat endpoint
// reads it, answered as a response object or streamed as its events (server/responses_api_output.h).
// Nothing is stored, so GET /v1/responses/{id} and previous_response_id have nothing to find.
#include "core/json_text.h"
#include "server/generation_setup.h"
#include "server/responses_api_output.h"
#include "server/responses_api_request.h"
#include "server/sse_job_stream.h"

namespace glia::server {
namespace {

void respond(server_state& st, const httplib::Request& req, httplib::Response& res) {
  st.stats.requests_responses++;
  if (auto e = refuse_unready(st, res)) return send_error(res, *e);
  auto parsed = parse_responses_api_request(req.body, st.sampling_defaults);
  if (!parsed.ok()) return send_error(res, parsed.error());
  responses_api_request& r = parsed.value();
  reply_reading reading;
  auto prompts = build_prompts(st, r.chat, reading);
  if (!prompts.ok()) return send_error(res, in_responses_api_terms(prompts.error()));
  auto guard = std::make_unique<in_flight_guard>(st);
  auto queued = queue_jobs(st, r.chat, prompts.value(), req, res);
  if (!queued.ok()) return send_error(res, queued.error());
  std::shared_ptr<job> j = queued.value().front();
  response_head head = new_response_head(r.chat.model.empty() ? st.model_name : r.chat.model, std::move(r.settings));
  if (r.chat.params.stream) return stream_job(req, res, responses_api_stream(reading, std::move(head)), j, std::move(guard));
  const std::string reply = wait_for_reply(*j);
  if (j->reason == finish_kind::error) return send_error(res, api_error{j->error_status, j->error});
  res.set_content(ordered_json_text(responses_api_response(reading, head, reply, *j)), "application/json");
}

}  // namespace

void add_responses_api_routes(httplib::Server& svr, server_state& st) {
  add_route(svr, st, "POST", "/v1/responses", [&st](const httplib::Request& req, httplib::Response& res) { respond(st, req, res); });
}

}  // namespace glia::server
