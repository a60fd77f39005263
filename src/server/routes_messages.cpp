// POST /v1/messages and POST /v1/messages/count_tokens: Anthropic's Messages API over the same
// engine as the chat endpoint (server/anthropic_request.h says how a request maps onto it). A reply is
// read as the chat endpoint reads it (reasoning apart, tool calls in the model's syntax or forced) and
// comes back as content blocks: thinking, text, tool_use; streamed as Anthropic's events, a block at a
// time, each opened, filled by deltas and closed.
#include <fmt/core.h>

#include <chrono>
#include <optional>

#include "core/json_text.h"
#include "server/anthropic_request.h"
#include "server/anthropic_responses.h"
#include "server/anthropic_stream.h"
#include "server/connection.h"
#include "server/generation_setup.h"

namespace glia::server {
namespace {

using ojson = nlohmann::ordered_json;
// Anthropic's streams send ping events; one goes out whenever nothing else did for this long (a long
// prompt's prefill, text held while it may be a call).
constexpr auto ping_interval = std::chrono::seconds(10);

struct prepared {
  messages_request r;
  reply_reading reading;
  std::vector<int32_t> prompt;
};

api_result<prepared> prepare(server_state& st, std::string_view body, bool counting) {
  auto parsed = parse_messages_request(body, st.sampling_defaults, counting);
  if (!parsed.ok()) return parsed.error();
  prepared p{std::move(parsed.value()), {}, {}};
  // Counting tells a client whether a prompt fits: one that does not is counted, not refused.
  auto prompts = build_prompts(st, p.r.chat, p.reading, !counting);
  if (!prompts.ok()) return in_anthropic_terms(prompts.error());
  p.prompt = std::move(prompts.value().front());
  if (p.r.chat.params.ignore_eos) st.sess().forbid_end_of_generation(p.r.chat.params.sampling);
  return p;
}

void respond_with_message(const httplib::Request& req, const prepared& p, const std::shared_ptr<job>& jp, const std::string& model,
                          httplib::Response& res) {
  job& j = *jp;
  std::string text;
  std::vector<gen_event> events;
  for (bool done = false; !done;) {
    events.clear();
    done = j.wait(events, poll_interval);
    for (auto& e : events) text += e.text;
    if (!done && peer_closed(j.client_fd)) j.cancel = true;
  }
  if (j.reason == finish_kind::error) return send_error_for(req, res, api_error{j.error_status, j.error});
  res.set_content(ordered_json_text(anthropic_message(p.reading, p.r.stop_sequences, model, text, j)), "application/json");
}

// A streamed message between calls of the content provider.
class message_stream {
 public:
  message_stream(const prepared& p, std::shared_ptr<job> j, const std::string& model, std::unique_ptr<in_flight_guard> guard)
      : events_(p.reading, p.r.stop_sequences, model), n_prompt_(int(p.prompt.size())), j_(std::move(j)), guard_(std::move(guard)) {}

  bool step(httplib::DataSink& sink) {
    std::vector<gen_event> events;
    const bool done = j_->wait(events, poll_interval);
    const auto now = std::chrono::steady_clock::now();
    // message_start once the job has a slot (its usage then says what the cache held), before the
    // prompt is read: a long prefill must not leave the client without a byte; a job that waits for
    // a slot longer than a ping's interval starts without knowing.
    std::string out;
    if (!started_) {
      const int reused = j_->n_reused.load();
      if (reused < 0 && events.empty() && !done && now - last_write_ < ping_interval) return true;
      out = events_.start(n_prompt_, reused);
      started_ = true;
    }
    for (const auto& e : events) out += events_.push(e.text);
    if (done) {
      if (j_->reason == finish_kind::cancelled) return false;
      out += j_->reason == finish_kind::error ? events_.error(api_error{j_->error_status, j_->error}) : events_.finish(*j_);
    }
    if (out.empty() && now - last_write_ >= ping_interval) out = anthropic_event({{"type", "ping"}});
    if (!out.empty()) {
      if (!sink.write(out.data(), out.size())) {
        j_->cancel = true;
        return false;
      }
      last_write_ = now;
    }
    if (done) sink.done();
    return true;
  }

  // The response ended (or the client left): the engine lets go of the job before the request stops
  // counting as in flight.
  void end(bool success) {
    if (!success) j_->cancel = true;
    std::vector<gen_event> ignored;
    while (!j_->wait(ignored, poll_interval)) ignored.clear();
    guard_.reset();
  }

 private:
  anthropic_stream events_;
  int n_prompt_;
  std::shared_ptr<job> j_;
  std::unique_ptr<in_flight_guard> guard_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

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
  if (!p.value().r.chat.params.stream) return respond_with_message(req, p.value(), j, model, res);
  auto ms = std::make_shared<message_stream>(p.value(), j, model, std::move(guard));
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [ms](size_t, httplib::DataSink& sink) { return ms->step(sink); }, [ms](bool success) { ms->end(success); });
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
