// POST /v1/chat/completions and POST /v1/completions: parse, build the prompt, queue a job, and
// answer as one JSON object or as an SSE stream.
#include <fmt/core.h>

#include <optional>
#include <random>

#include "core/json_text.h"
#include "server/chat_prefill.h"
#include "server/connection.h"
#include "server/request.h"
#include "server/responses.h"
#include "server/server_state.h"
#include "server/sse.h"

namespace glia::server {
namespace {

using nlohmann::json;
constexpr auto poll_interval = std::chrono::milliseconds(50);

api_result<std::vector<int32_t>> build_prompt(server_state& st, completion_request& r) {
  const session& s = st.sess();
  std::vector<int32_t> ids;
  if (r.chat) {
    json kwargs = st.template_kwargs;
    kwargs.update(r.template_kwargs);
    auto text = s.render_chat(st.chat_fmt, json_text(r.messages), r.add_generation_prompt, json_text(kwargs));
    if (!text) return bad_request(fmt::format("the chat template failed: {}", text.message()), "messages");
    if (r.continue_final_message) {
      const auto end = continued_message_end(*text, r.messages.back()["content"].get<std::string>());
      if (!end)
        return bad_request("the chat template does not write the final message's content, so it cannot be continued",
                           "continue_final_message");
      text->resize(*end);
    }
    // The template writes the special tokens (BOS included) as text.
    auto t = s.tokenize(*text, false, true);
    if (!t) return bad_request(t.message(), "messages");
    ids = std::move(*t);
    if (!st.chat_fmt.end_of_turn.empty()) r.params.stop.push_back(st.chat_fmt.end_of_turn);
  } else if (r.prompt_is_ids) {
    for (int64_t id : r.prompt_ids) {
      if (id >= s.n_vocab())
        return bad_request(fmt::format("prompt token id {} is outside the vocabulary (0..{})", id, s.n_vocab() - 1), "prompt");
      ids.push_back(int32_t(id));
    }
  } else {
    auto t = s.tokenize(r.prompt_text, true, true);
    if (!t) return bad_request(t.message(), "prompt");
    ids = std::move(*t);
  }
  const char* field = r.chat ? "messages" : "prompt";
  if (ids.empty()) return bad_request("the prompt is empty", field);
  // At least one position must stay free for a generated token.
  if (int64_t(ids.size()) >= s.n_ctx()) {
    api_error e = bad_request(fmt::format("the prompt has {} tokens, but the context holds {} (and needs room for at least one generated token)",
                                          ids.size(), s.n_ctx()), field);
    e.code = "context_length_exceeded";
    return e;
  }
  for (const auto& [id, bias] : r.params.sampling.logit_bias)
    if (id >= s.n_vocab())
      return bad_request(fmt::format("logit_bias token id {} is outside the vocabulary (0..{})", id, s.n_vocab() - 1), "logit_bias");
  return ids;
}

// Counts a generation request as in flight until its response has been written (or abandoned), so
// SIGTERM can wait for it.
struct in_flight_guard {
  explicit in_flight_guard(server_state& s) : st(s) { st.in_flight++; }
  ~in_flight_guard() { st.in_flight--; }
  server_state& st;
};

void respond_whole(server_state& st, const response_meta& meta, const std::shared_ptr<job>& j, httplib::Response& res) {
  std::string text;
  std::vector<token_logprob> lps;
  std::vector<gen_event> events;
  bool done = false;
  while (!done) {
    events.clear();
    done = j->wait(events, poll_interval);
    for (auto& e : events) {
      text += e.text;
      for (auto& lp : e.logprobs) lps.push_back(std::move(lp));
    }
    if (!done && peer_closed(j->client_fd)) j->cancel = true;
  }
  if (j->reason == finish_kind::error) return send_error(res, api_error{500, j->error});
  res.set_content(json_text(completion_json(meta, text, j->params.logprobs ? &lps : nullptr, j->reason, j->n_prompt, j->n_generated)),
                  "application/json");
}

// State of one SSE response between calls of the content provider.
struct stream_state {
  std::shared_ptr<job> j;
  response_meta meta;
  bool first = true;
  std::unique_ptr<in_flight_guard> guard;
};

bool write(httplib::DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

bool stream_step(const std::shared_ptr<stream_state>& ss, httplib::DataSink& sink) {
  job& j = *ss->j;
  const bool usage = j.params.include_usage;
  std::vector<gen_event> events;
  const bool done = j.wait(events, poll_interval);
  for (const auto& e : events) {
    const auto* lps = j.params.logprobs ? &e.logprobs : nullptr;
    const json chunk = chunk_json(ss->meta, e.text, lps, ss->first && ss->meta.chat, finish_kind::none, usage);
    if (!write(sink, sse_data(json_text(chunk)))) {
      j.cancel = true;
      return false;
    }
    ss->first = false;
  }
  if (!done) return true;
  if (j.reason == finish_kind::cancelled) return false;
  std::string tail;
  if (j.reason == finish_kind::error) {
    tail += sse_data(api_error{500, j.error}.to_json());
  } else {
    tail += sse_data(json_text(chunk_json(ss->meta, "", nullptr, ss->first && ss->meta.chat, j.reason, usage)));
    if (usage) tail += sse_data(json_text(usage_chunk_json(ss->meta, j.n_prompt, j.n_generated)));
  }
  tail += sse_done;
  if (!write(sink, tail)) return false;
  sink.done();
  return true;
}

void generate(server_state& st, bool chat, const httplib::Request& req, httplib::Response& res) {
  (chat ? st.stats.requests_chat : st.stats.requests_completion)++;
  if (!st.ready.load() || st.draining.load()) {
    res.set_header("Retry-After", "1");
    return send_error(res, api_error{503, st.ready.load() ? "the server is shutting down" : "the model is still loading"});
  }
  auto parsed = chat ? parse_chat_request(req.body, st.sampling_defaults) : parse_completion_request(req.body, st.sampling_defaults);
  if (!parsed.ok()) return send_error(res, parsed.error());
  completion_request& r = parsed.value();
  auto prompt = build_prompt(st, r);
  if (!prompt.ok()) return send_error(res, prompt.error());
  if (!r.params.seed_given) r.params.sampling.seed = std::random_device{}() * 0x100000001ull;
  if (r.params.ignore_eos) st.sess().forbid_end_of_generation(r.params.sampling);

  auto j = std::make_shared<job>();
  j->prompt = std::move(prompt.value());
  j->params = r.params;
  j->client_fd = find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  auto guard = std::make_unique<in_flight_guard>(st);
  switch (st.sched->submit(j)) {
    case submit_result::accepted: break;
    case submit_result::queue_full:
      st.stats.rejected_queue_full++;
      res.set_header("Retry-After", "1");
      return send_error(res, api_error{503, "all slots are busy and the queue is full; retry later"});
    case submit_result::shutting_down:
      res.set_header("Retry-After", "1");
      return send_error(res, api_error{503, "the server is shutting down"});
  }
  const response_meta meta = new_response_meta(chat, r.model.empty() ? st.model_name : r.model);
  if (!r.params.stream) return respond_whole(st, meta, j, res);

  auto ss = std::make_shared<stream_state>();
  ss->j = j;
  ss->meta = meta;
  ss->guard = std::move(guard);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [ss](size_t, httplib::DataSink& sink) { return stream_step(ss, sink); },
      [ss](bool success) {
        // The response ended (or the client went away): stop generating, wait for the engine to let
        // go of the job, and only then stop counting it as in flight.
        if (!success) ss->j->cancel = true;
        std::vector<gen_event> ignored;
        while (!ss->j->wait(ignored, poll_interval)) ignored.clear();
        ss->guard.reset();
      });
}

}  // namespace

void add_generation_routes(httplib::Server& svr, server_state& st) {
  add_route(svr, st, "POST", "/v1/chat/completions", [&st](const httplib::Request& req, httplib::Response& res) { generate(st, true, req, res); });
  add_route(svr, st, "POST", "/v1/completions", [&st](const httplib::Request& req, httplib::Response& res) { generate(st, false, req, res); });
}

}  // namespace glia::server
