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
#include "server/connection.h"
#include "server/generation_setup.h"
#include "server/required_call_stream.h"
#include "server/tool_gate.h"

namespace glia::server {
namespace {

using ojson = nlohmann::ordered_json;
// Anthropic's streams send ping events; one goes out whenever nothing else did for this long (a long
// prompt's prefill, text held while it may be a call).
constexpr auto ping_interval = std::chrono::seconds(10);

void send_anthropic_error(httplib::Response& res, const api_error& e) {
  res.status = e.status;
  res.set_content(anthropic_error_json(e), "application/json");
}

struct prepared {
  messages_request r;
  reply_reading reading;
  std::vector<int32_t> prompt;
};

api_result<prepared> prepare(server_state& st, std::string_view body, bool counting) {
  auto parsed = parse_messages_request(body, st.sampling_defaults, counting);
  if (!parsed.ok()) return parsed.error();
  prepared p{std::move(parsed.value()), {}, {}};
  auto prompts = build_prompts(st, p.r.chat, p.reading);
  if (!prompts.ok()) return prompts.error();
  p.prompt = std::move(prompts.value().front());
  if (p.r.chat.params.ignore_eos) st.sess().forbid_end_of_generation(p.r.chat.params.sampling);
  return p;
}

ojson text_block(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
// Local reasoning has no signature (Anthropic's signs its own so that it can be passed back unaltered).
ojson thinking_block(const std::string& text) { return {{"type", "thinking"}, {"thinking", text}, {"signature", ""}}; }
ojson tool_use_block(const std::string& name, ojson input) {
  return {{"type", "tool_use"}, {"id", new_tool_use_id()}, {"name", name}, {"input", std::move(input)}};
}

void respond_with_message(const prepared& p, const std::shared_ptr<job>& jp, const std::string& model, httplib::Response& res) {
  job& j = *jp;
  std::string text;
  std::vector<gen_event> events;
  for (bool done = false; !done;) {
    events.clear();
    done = j.wait(events, poll_interval);
    for (auto& e : events) text += e.text;
    if (!done && peer_closed(j.client_fd)) j.cancel = true;
  }
  if (j.reason == finish_kind::error) return send_anthropic_error(res, api_error{j.error_status, j.error});
  const reply_reading& reading = p.reading;
  reply_parts parts{{}, std::move(text)};
  if (reading.reasoning) parts = split_reasoning(parts.content, *reading.reasoning, reading.start, reading.before);
  parsed_reply reply{std::move(parts.content), {}};
  if (reading.reads_calls()) reply = read_tool_reply(reading.options, reading.syntax, reply.content);
  ojson content = ojson::array();
  if (!parts.reasoning.empty()) content.push_back(thinking_block(parts.reasoning));
  if (!reply.content.empty()) content.push_back(text_block(reply.content));
  bool has_calls = false;
  for (const tool_call& c : reply.calls) {
    // A forced call's arguments cut short by max_tokens are no input object: they stay text.
    ojson input = ojson::parse(c.arguments, nullptr, false);
    if (!input.is_object()) {
      content.push_back(text_block(c.arguments));
      continue;
    }
    content.push_back(tool_use_block(c.name, std::move(input)));
    has_calls = true;
  }
  std::string matched;
  const std::string reason = stop_reason_of(j, has_calls, p.r.stop_sequences, matched);
  res.set_content(
      ordered_json_text(message_json(new_message_id(), model, std::move(content), reason, matched, anthropic_usage(j.n_prompt, j.n_reused, j.n_generated))),
      "application/json");
}

// A streamed message: the blocks open one after another (the index counts them), each closed before
// the next opens.
class message_stream {
 public:
  message_stream(prepared p, std::shared_ptr<job> j, std::string model, std::unique_ptr<in_flight_guard> guard)
      : p_(std::move(p)), j_(std::move(j)), model_(std::move(model)), guard_(std::move(guard)) {
    const reply_reading& reading = p_.reading;
    if (reading.reasoning) splitter_.emplace(*reading.reasoning, reading.start, reading.before);
    if (reading.options.mode == tool_mode::required) required_.emplace(reading.options.parallel ? SIZE_MAX : 1);
    else if (reading.reads_calls() && reading.options.mode != tool_mode::named) gate_.emplace(reading.syntax);
  }

  bool step(httplib::DataSink& sink);
  // The response ended (or the client left): the engine lets go of the job before the request stops
  // counting as in flight.
  void end(bool success) {
    if (!success) j_->cancel = true;
    std::vector<gen_event> ignored;
    while (!j_->wait(ignored, poll_interval)) ignored.clear();
    guard_.reset();
  }

 private:
  enum class block { none, thinking, text, tool_use };

  void open(block kind, ojson content_block) {
    close();
    open_ = kind;
    out_ += anthropic_event({{"type", "content_block_start"}, {"index", ++index_}, {"content_block", std::move(content_block)}});
  }
  void close() {
    if (open_ == block::none) return;
    out_ += anthropic_event({{"type", "content_block_stop"}, {"index", index_}});
    open_ = block::none;
  }
  void delta(ojson d) { out_ += anthropic_event({{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(d)}}); }
  void thinking(const std::string& t) {
    if (t.empty()) return;
    if (open_ != block::thinking) open(block::thinking, thinking_block(""));
    delta({{"type", "thinking_delta"}, {"thinking", t}});
  }
  void text(const std::string& t) {
    if (t.empty()) return;
    if (open_ != block::text) open(block::text, text_block(""));
    delta({{"type", "text_delta"}, {"text", t}});
  }
  void call(const std::string& name) {
    open(block::tool_use, tool_use_block(name, ojson::object()));
    ++calls_;
  }
  void input(const std::string& json_piece) {
    if (!json_piece.empty()) delta({{"type", "input_json_delta"}, {"partial_json", json_piece}});
  }
  // Content (the text after any reasoning): text, or a forced choice's calls as they come.
  void content(const std::string& t) {
    if (p_.reading.options.mode == tool_mode::named) {
      if (t.empty()) return;
      if (calls_ == 0) call(p_.reading.options.function);
      return input(t);
    }
    if (required_) {
      for (const call_piece& piece : required_->push(t)) {
        if (piece.name) call(*piece.name);
        input(piece.arguments);
      }
      return;
    }
    text(gate_ ? gate_->push(t) : t);
  }
  void piece(const std::string& t) {
    reply_parts parts{{}, t};
    if (splitter_) parts = splitter_->push(t);
    thinking(parts.reasoning);
    content(parts.content);
  }
  void finish();

  prepared p_;
  std::shared_ptr<job> j_;
  std::string model_;
  std::unique_ptr<in_flight_guard> guard_;
  std::optional<reasoning_splitter> splitter_;
  std::optional<tool_reply_gate> gate_;
  std::optional<required_call_stream> required_;
  bool started_ = false;
  block open_ = block::none;
  int index_ = -1;
  size_t calls_ = 0;
  std::string out_;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

// What the splitter and gate held, the calls read at the end, and the message's close.
void message_stream::finish() {
  if (splitter_) {
    const reply_parts rest = splitter_->finish();
    splitter_.reset();
    thinking(rest.reasoning);
    content(rest.content);
  }
  const reply_reading& reading = p_.reading;
  bool has_calls = calls_ > 0;
  if (reading.options.mode == tool_mode::named) {
    if (calls_ == 0) call(reading.options.function);  // no arguments came: the call still does
    has_calls = true;
  }
  if (gate_) {
    const parsed_reply reply = read_tool_reply(reading.options, reading.syntax, gate_->text());
    text(gate_->finish(reply));
    for (const tool_call& c : reply.calls) {
      call(c.name);
      input(c.arguments);
    }
    has_calls = !reply.calls.empty();
  }
  if (required_ && calls_ == 0) text(read_tool_reply(reading.options, reading.syntax, required_->text()).content);
  close();
  std::string matched;
  const std::string reason = stop_reason_of(*j_, has_calls, p_.r.stop_sequences, matched);
  out_ += anthropic_event({{"type", "message_delta"},
                           {"delta", {{"stop_reason", reason}, {"stop_sequence", matched.empty() ? ojson() : ojson(matched)}}},
                           {"usage", anthropic_usage(j_->n_prompt, j_->n_reused, j_->n_generated)}});
  out_ += anthropic_event({{"type", "message_stop"}});
}

bool message_stream::step(httplib::DataSink& sink) {
  if (!started_) {
    // At once, before the prompt is read: a long prefill must not leave the client without a byte.
    ojson usage = anthropic_usage(int(p_.prompt.size()), 0, 0);
    out_ += anthropic_event({{"type", "message_start"}, {"message", message_json(new_message_id(), model_, ojson::array(), "", "", usage)}});
    out_ += anthropic_event({{"type", "ping"}});
    started_ = true;
  }
  std::vector<gen_event> events;
  const bool done = j_->wait(events, poll_interval);
  for (const auto& e : events) piece(e.text);
  if (done) {
    if (j_->reason == finish_kind::cancelled) return false;
    if (j_->reason == finish_kind::error) {
      close();
      out_ += "event: error\ndata: " + anthropic_error_json(api_error{j_->error_status, j_->error}) + "\n\n";
    } else {
      finish();
    }
  }
  const auto now = std::chrono::steady_clock::now();
  if (out_.empty() && now - last_write_ >= ping_interval) out_ = anthropic_event({{"type", "ping"}});
  if (!out_.empty()) {
    const std::string chunk = std::exchange(out_, std::string());
    if (!sink.write(chunk.data(), chunk.size())) {
      j_->cancel = true;
      return false;
    }
    last_write_ = now;
  }
  if (done) sink.done();
  return true;
}

void messages(server_state& st, const httplib::Request& req, httplib::Response& res) {
  st.stats.requests_chat++;
  if (auto e = refuse_unready(st, res)) return send_anthropic_error(res, *e);
  auto p = prepare(st, req.body, false);
  if (!p.ok()) return send_anthropic_error(res, p.error());
  auto guard = std::make_unique<in_flight_guard>(st);
  auto queued = queue_jobs(st, p.value().r.chat, {p.value().prompt}, req, res);
  if (!queued.ok()) return send_anthropic_error(res, queued.error());
  std::shared_ptr<job> j = queued.value().front();
  const std::string model = p.value().r.chat.model.empty() ? st.model_name : p.value().r.chat.model;
  if (!p.value().r.chat.params.stream) return respond_with_message(p.value(), j, model, res);
  auto ms = std::make_shared<message_stream>(std::move(p.value()), j, model, std::move(guard));
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [ms](size_t, httplib::DataSink& sink) { return ms->step(sink); }, [ms](bool success) { ms->end(success); });
}

// The prompt's tokens as /v1/messages would read them (Anthropic's token counting endpoint).
void count_tokens(server_state& st, const httplib::Request& req, httplib::Response& res) {
  if (auto e = refuse_unready(st, res)) return send_anthropic_error(res, *e);
  auto p = prepare(st, req.body, true);
  if (!p.ok()) return send_anthropic_error(res, p.error());
  res.set_content(json_text(nlohmann::json{{"input_tokens", p.value().prompt.size()}}), "application/json");
}

}  // namespace

void add_messages_routes(httplib::Server& svr, server_state& st) {
  add_route(svr, st, "POST", "/v1/messages", [&st](const httplib::Request& req, httplib::Response& res) { messages(st, req, res); });
  add_route(svr, st, "POST", "/v1/messages/count_tokens",
            [&st](const httplib::Request& req, httplib::Response& res) { count_tokens(st, req, res); });
}

}  // namespace glia::server
