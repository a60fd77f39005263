// POST /v1/chat/completions and POST /v1/completions: parse, build the prompt, queue a job, and
// answer as one JSON object or as an SSE stream.
#include <fmt/core.h>

#include <chrono>
#include <optional>
#include <thread>

#include "core/json_text.h"
#include "server/connection.h"
#include "server/generation_setup.h"
#include "server/request.h"
#include "server/responses.h"
#include "server/server_state.h"
#include "server/reasoning_split.h"
#include "server/required_call_stream.h"
#include "server/sse.h"
#include "server/tool_gate.h"

namespace glia::server {
namespace {

using nlohmann::json;


// Every choice, whole, in one answer (choice i is jobs[i]).
void respond_whole(const response_meta& meta, const std::vector<std::shared_ptr<job>>& jobs, int n_per_prompt,
                   const reply_reading& reading, httplib::Response& res) {
  json answer;
  for (size_t i = 0; i < jobs.size(); ++i) {
    job& j = *jobs[i];
    std::string text;
    std::vector<token_logprob> lps;
    if (auto e = wait_for_events(j, jobs, text, lps)) return send_error(res, *e);
    const auto* lp = j.params.logprobs ? &lps : nullptr;
    reply_parts parts{{}, std::move(text)};
    if (reading.reasoning) parts = split_reasoning(parts.content, *reading.reasoning, reading.start, reading.before);
    parsed_reply reply{std::move(parts.content), {}};
    if (reading.reads_calls()) reply = read_tool_reply(reading.options, reading.syntax, reply.content);
    response_meta m = meta;
    m.choice_index = int(i);
    json one = completion_json(m, reply.content, lp, reported_finish(j.reason, reply, reading), 0, 0, reply.calls, parts.reasoning);
    if (i == 0) answer = std::move(one);
    else answer["choices"].push_back(std::move(one["choices"][0]));
  }
  answer["usage"] = usage_of(jobs, n_per_prompt, meta.chat);
  res.set_content(json_text(answer), "application/json");
}

// One choice of an SSE response between calls of the content provider.
struct choice_stream {
  std::shared_ptr<job> j;
  response_meta meta;  // with this choice's index
  bool first = true;
  bool finished = false;  // its last chunk (finish_reason) went out
  reply_reading reading;
  std::optional<reasoning_splitter> splitter;  // a reasoning model: reasoning apart from content
  std::optional<tool_reply_gate> gate;         // with tools: holds back what may be calls
  std::optional<required_call_stream> required;  // tool_choice "required": calls stream as they come
  std::optional<tool_call> named_call;         // a named function: its arguments stream as they come
  bool named_call_opened = false;              // its first chunk (id, type, name) went out
};

// An SSE response: its choices' chunks interleave as they come (each names its index).
struct stream_state {
  std::vector<choice_stream> choices;
  int n_per_prompt = 1;
  std::unique_ptr<in_flight_guard> guard;
  std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
  void cancel_all() {
    for (auto& c : choices) c.j->cancel = true;
  }
};


bool write(httplib::DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

// A piece of a call as OpenAI streams it: the first opens the call (index, id, type, name), the next
// add to its arguments.
std::string call_piece_chunk(choice_stream& ss, const call_piece& p, const std::string& id, const std::vector<token_logprob>* lps, bool usage) {
  json c = chunk_json(ss.meta, "", nullptr, ss.first, finish_kind::none, usage);
  json& delta = c["choices"][0]["delta"];
  delta.erase("content");
  json call = {{"index", p.index}, {"function", {{"arguments", p.arguments}}}};
  if (p.name) {
    call["id"] = id;
    call["type"] = "function";
    call["function"]["name"] = *p.name;
  }
  delta["tool_calls"] = json::array({std::move(call)});
  if (lps && !lps->empty()) c["choices"][0]["logprobs"] = logprobs_json(true, *lps);
  ss.first = false;
  return sse_data(json_text(c));
}

// A named function's arguments as they come (its only call, index 0).
std::string named_call_chunk(choice_stream& ss, const std::string& arguments, const std::vector<token_logprob>* lps, bool usage) {
  call_piece p{0, std::nullopt, arguments};
  if (!ss.named_call_opened) p.name = ss.named_call->name;
  ss.named_call_opened = true;
  return call_piece_chunk(ss, p, ss.named_call->id, lps, usage);
}

// The chunks for a piece of generated text: its reasoning, then its content (held back by the gate
// where it may be calls; a forced choice's calls as they come). Logprobs go with the first chunk;
// an event with nothing to show and no logprobs sends nothing (without a splitter or gate, every
// event is a chunk, as before).
std::string text_chunks(choice_stream& ss, const std::string& text, const std::vector<token_logprob>* lps, bool usage) {
  reply_parts parts{{}, text};
  if (ss.splitter) parts = ss.splitter->push(text);
  if (ss.gate) parts.content = ss.gate->push(parts.content);
  const bool has_lps = lps && !lps->empty();
  std::string out;
  if (!parts.reasoning.empty()) {
    out += sse_data(json_text(reasoning_chunk_json(ss.meta, parts.reasoning, lps, ss.first, usage)));
    ss.first = false;
    lps = nullptr;
  }
  // A named function's arguments are the content (a reasoning model's thinking goes out before them);
  // logprobs of text the splitter holds go in a chunk of their own, so that the call does not open early.
  if (ss.named_call && (!parts.content.empty() || (lps && has_lps && !ss.splitter)))
    return out + named_call_chunk(ss, parts.content, lps, usage);
  if (ss.named_call && !(lps && has_lps)) return out;
  if (ss.required) {
    for (const call_piece& p : ss.required->push(parts.content)) {
      out += call_piece_chunk(ss, p, p.name ? new_tool_call_id(ss.reading.syntax) : std::string(), lps, usage);
      lps = nullptr;
    }
    if (!(lps && has_lps)) return out;
    parts.content.clear();  // held text's logprobs go in a chunk of their own
  }
  const bool filtered = ss.splitter || ss.gate;
  if (!parts.content.empty() || !filtered || (lps && has_lps)) {
    out += sse_data(json_text(chunk_json(ss.meta, parts.content, lps, ss.first && ss.meta.chat, finish_kind::none, usage)));
    ss.first = false;
  }
  return out;
}

// The chunks that end a choice: what its splitter and gate held, its calls, its finish reason (or
// its error).
std::string choice_tail(choice_stream& ss, bool usage) {
  job& j = *ss.j;
  if (j.reason == finish_kind::error) return sse_data(api_error{j.error_status, j.error}.to_json());
  std::string tail;
  finish_kind reason = j.reason;
  if (ss.splitter) {
    const reply_parts rest = ss.splitter->finish();
    ss.splitter.reset();  // what it held goes through the gate now
    if (!rest.reasoning.empty()) {
      tail += sse_data(json_text(reasoning_chunk_json(ss.meta, rest.reasoning, nullptr, ss.first, usage)));
      ss.first = false;
    }
    if (!rest.content.empty()) tail += text_chunks(ss, rest.content, nullptr, usage);
  }
  if (ss.named_call && !ss.named_call_opened) tail += named_call_chunk(ss, "", nullptr, usage);  // no arguments came: the call still does
  if (ss.gate) {
    const parsed_reply reply = read_tool_reply(ss.reading.options, ss.reading.syntax, ss.gate->text());
    if (const std::string rest = ss.gate->finish(reply); !rest.empty()) {
      tail += sse_data(json_text(chunk_json(ss.meta, rest, nullptr, ss.first, finish_kind::none, usage)));
      ss.first = false;
    }
    if (!reply.calls.empty()) {
      tail += sse_data(json_text(tool_calls_chunk_json(ss.meta, reply.calls, ss.first, usage)));
      ss.first = false;
    }
    reason = reported_finish(reason, reply, ss.reading);
  }
  if (ss.required) {
    // The calls went out as they came; a reply that opened none (cut before a name) is content.
    const parsed_reply reply = read_tool_reply(ss.reading.options, ss.reading.syntax, ss.required->text());
    if (ss.required->opened() == 0 && !reply.content.empty()) {
      tail += sse_data(json_text(chunk_json(ss.meta, reply.content, nullptr, ss.first, finish_kind::none, usage)));
      ss.first = false;
    }
    reason = reported_finish(reason, reply, ss.reading);
  }
  tail += sse_data(json_text(chunk_json(ss.meta, "", nullptr, ss.first && ss.meta.chat, reason, usage)));
  return tail;
}

bool stream_step(const std::shared_ptr<stream_state>& ss, httplib::DataSink& sink) {
  const generation_params& params = ss->choices.front().j->params;
  const bool usage = params.include_usage;
  std::string out;
  bool all_done = true, error = false;
  // One choice waits for its events; several are polled in turn, each without blocking.
  const bool one = ss->choices.size() == 1;
  for (choice_stream& c : ss->choices) {
    if (c.finished) continue;
    job& j = *c.j;
    std::vector<gen_event> events;
    const bool done = j.wait(events, one ? poll_interval : std::chrono::milliseconds(0));
    if (c.first && c.meta.chat && (c.gate || c.splitter || c.named_call || c.required)) {
      out += sse_data(json_text(chunk_json(c.meta, "", nullptr, true, finish_kind::none, usage)));
      c.first = false;
    }
    for (const auto& e : events) out += text_chunks(c, e.text, params.logprobs ? &e.logprobs : nullptr, usage);
    if (!done) {
      all_done = false;
      continue;
    }
    if (j.reason == finish_kind::cancelled) {
      ss->cancel_all();
      return false;
    }
    out += choice_tail(c, usage);
    c.finished = true;
    error |= j.reason == finish_kind::error;
  }
  if (error) {
    // One choice failed: the others stop, and the stream ends with its error.
    ss->cancel_all();
    all_done = true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (out.empty() && !all_done) {
    if (now - ss->last_write >= sse_keep_alive_interval) out = sse_keep_alive;
    else if (!one) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // nothing came from any choice
  }
  if (!out.empty()) {
    if (!write(sink, out)) {
      ss->cancel_all();
      return false;
    }
    ss->last_write = now;
  }
  if (!all_done) return true;
  std::string tail;
  if (usage && !error) {
    std::vector<std::shared_ptr<job>> jobs;
    for (const auto& c : ss->choices) jobs.push_back(c.j);
    tail += sse_data(json_text(usage_chunk_json(ss->choices.front().meta, usage_of(jobs, ss->n_per_prompt, ss->choices.front().meta.chat))));
  }
  tail += sse_done;
  if (!write(sink, tail)) return false;
  sink.done();
  return true;
}

void generate(server_state& st, bool chat, const httplib::Request& req, httplib::Response& res) {
  (chat ? st.stats.requests_chat : st.stats.requests_completion)++;
  if (auto e = refuse_unready(st, res)) return send_error(res, *e);
  auto parsed = chat ? parse_chat_request(req.body, st.sampling_defaults) : parse_completion_request(req.body, st.sampling_defaults);
  if (!parsed.ok()) return send_error(res, parsed.error());
  completion_request& r = parsed.value();
  reply_reading reading;
  auto prompts = build_prompts(st, r, reading);
  if (!prompts.ok()) return send_error(res, prompts.error());
  auto guard = std::make_unique<in_flight_guard>(st);
  auto queued = queue_jobs(st, r, prompts.value(), req, res);
  if (!queued.ok()) return send_error(res, queued.error());
  const std::vector<std::shared_ptr<job>>& jobs = queued.value();
  const response_meta meta = new_response_meta(chat, r.model.empty() ? st.model_name : r.model);
  if (!r.params.stream) return respond_whole(meta, jobs, r.n, reading, res);

  auto ss = std::make_shared<stream_state>();
  ss->n_per_prompt = r.n;
  ss->guard = std::move(guard);
  for (size_t i = 0; i < jobs.size(); ++i) {
    choice_stream c;
    c.j = jobs[i];
    c.meta = meta;
    c.meta.choice_index = int(i);
    c.reading = reading;
    if (reading.reasoning) c.splitter.emplace(*reading.reasoning, reading.start, reading.before);
    if (reading.options.mode == tool_mode::named)
      c.named_call = tool_call{new_tool_call_id(reading.syntax), reading.options.function, ""};
    else if (reading.options.mode == tool_mode::required)
      c.required.emplace(reading.options.parallel ? SIZE_MAX : 1);
    else if (reading.reads_calls())
      c.gate.emplace(reading.syntax);
    ss->choices.push_back(std::move(c));
  }
  set_event_stream(
      req, res, [ss](size_t, httplib::DataSink& sink) { return stream_step(ss, sink); },
      [ss](bool success) {
        // The response ended (or the client went away): stop generating, wait for the engine to let
        // go of the jobs, and only then stop counting the request as in flight.
        if (!success) ss->cancel_all();
        std::vector<gen_event> ignored;
        for (auto& c : ss->choices)
          while (!c.j->wait(ignored, poll_interval)) ignored.clear();
        ss->guard.reset();
      });
}

}  // namespace

void add_generation_routes(httplib::Server& svr, server_state& st) {
  add_route(svr, st, "POST", "/v1/chat/completions", [&st](const httplib::Request& req, httplib::Response& res) { generate(st, true, req, res); });
  // llama-server's spelling without the version (its /completion and /completions are its own API:
  // routes_native.cpp).
  add_route(svr, st, "POST", "/chat/completions", [&st](const httplib::Request& req, httplib::Response& res) { generate(st, true, req, res); });
  add_route(svr, st, "POST", "/v1/completions", [&st](const httplib::Request& req, httplib::Response& res) { generate(st, false, req, res); });
}

}  // namespace glia::server
