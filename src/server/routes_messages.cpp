// POST /v1/messages and POST /v1/messages/count_tokens: Anthropic's Messages API over the same
// engine as the chat endpoint (server/anthropic_request.h says how a request maps onto it). A reply is
// read as the chat endpoint reads it (reasoning apart, tool calls in the model's syntax or forced) and
// comes back as content blocks: thinking, text, tool_use; streamed as Anthropic's events, a block at a
// time, each opened, filled by deltas and closed.
#include <fmt/core.h>

#include "core/json_text.h"
#include "server/anthropic_request.h"
#include "server/anthropic_responses.h"
#include "server/anthropic_stream.h"
#include "server/generation_setup.h"
#include "server/sse_job_stream.h"

namespace glia::server {
namespace {

struct prepared {
  messages_request r;
  reply_reading reading;
  std::vector<int32_t> prompt;
};

api_result<prepared> prepare(server_state& st, std::string_view body, bool counting) {
  auto parsed = parse_messages_request(body, st.sampling_defaults, counting);
  if (!parsed.ok()) return parsed.error();
  prepared p{std::move(parsed.value()), {}, {}};
  auto prompts = build_prompts(st, p.r.chat, p.reading, false);
  if (!prompts.ok()) return in_anthropic_terms(prompts.error());
  p.prompt = std::move(prompts.value().front());
  // Counting tells a client whether a prompt fits: one that does not is counted, not refused. The
  // refusal is in Anthropic's phrase, which clients look for to compact a conversation.
  const session& s = st.sess();
  if (!counting && !fits_context(s, p.prompt.size(), false)) {
    api_error e = bad_request(fmt::format("prompt is too long: {} tokens > {} maximum (the context holds {} and needs room for at least "
                                          "one generated token)",
                                          p.prompt.size(), s.n_ctx() - 1, s.n_ctx()),
                              "messages");
    e.code = "context_length_exceeded";
    return e;
  }
  return p;
}

void messages(server_state& st, const httplib::Request& req, httplib::Response& res) {
  st.stats.requests_messages++;
  if (auto e = refuse_unready(st, res)) return send_error_for(req, res, *e);
  auto p = prepare(st, req.body, false);
  if (!p.ok()) return send_error_for(req, res, p.error());
  auto guard = std::make_unique<in_flight_guard>(st);
  auto queued = queue_jobs(st, p.value().r.chat, {p.value().prompt}, req, res);
  if (!queued.ok()) return send_error_for(req, res, queued.error());
  std::shared_ptr<job> j = queued.value().front();
  const std::string model = p.value().r.chat.model.empty() ? st.model_name : p.value().r.chat.model;
  const prepared& pr = p.value();
  if (pr.r.chat.params.stream)
    return stream_job(req, res, anthropic_stream(pr.reading, pr.r.stop_sequences, model, int(pr.prompt.size())), j, std::move(guard));
  const std::string reply = wait_for_reply(*j);
  if (j->reason == finish_kind::error) return send_error_for(req, res, api_error{j->error_status, j->error});
  res.set_content(ordered_json_text(anthropic_message(pr.reading, pr.r.stop_sequences, model, reply, *j)), "application/json");
}

// The prompt's tokens as /v1/messages would read them (Anthropic's token counting endpoint).
void count_tokens(server_state& st, const httplib::Request& req, httplib::Response& res) {
  if (auto e = refuse_unready(st, res)) return send_error_for(req, res, *e);
  auto p = prepare(st, req.body, true);
  if (!p.ok()) return send_error_for(req, res, p.error());
  res.set_content(json_text(nlohmann::json{{"input_tokens", p.value().prompt.size()}}), "application/json");
}

}  // namespace

void add_messages_routes(httplib::Server& svr, server_state& st) {
  add_route(svr, st, "POST", "/v1/messages", [&st](const httplib::Request& req, httplib::Response& res) { messages(st, req, res); });
  add_route(svr, st, "POST", "/v1/messages/count_tokens",
            [&st](const httplib::Request& req, httplib::Response& res) { count_tokens(st, req, res); });
}

}  // namespace glia::server
