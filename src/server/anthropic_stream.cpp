#include "server/anthropic_stream.h"

#include "server/anthropic_responses.h"

namespace glia::server {

using ojson = nlohmann::ordered_json;

ojson text_block(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
// Local reasoning has no signature (Anthropic's signs its own so that it can be passed back unaltered).
ojson thinking_block(const std::string& text) { return {{"type", "thinking"}, {"thinking", text}, {"signature", ""}}; }
ojson tool_use_block(const std::string& name, ojson input) {
  return {{"type", "tool_use"}, {"id", new_tool_use_id()}, {"name", name}, {"input", std::move(input)}};
}

anthropic_stream::anthropic_stream(const reply_reading& reading, std::vector<std::string> stop_sequences, std::string model, int n_prompt_tokens)
    : reading_(reading), stop_sequences_(std::move(stop_sequences)), model_(std::move(model)), n_prompt_tokens_(n_prompt_tokens) {
  if (reading_.reasoning) splitter_.emplace(*reading_.reasoning, reading_.start, reading_.before);
  if (reading_.options.mode == tool_mode::required) required_.emplace(reading_.options.parallel ? SIZE_MAX : 1);
  else if (reading_.reads_calls() && reading_.options.mode != tool_mode::named) gate_.emplace(reading_.syntax);
}

std::string anthropic_stream::take() { return std::exchange(out_, std::string()); }

void anthropic_stream::open(block kind, ojson content_block) {
  close();
  open_ = kind;
  out_ += anthropic_event({{"type", "content_block_start"}, {"index", ++index_}, {"content_block", std::move(content_block)}});
}

void anthropic_stream::close() {
  if (open_ == block::none) return;
  out_ += anthropic_event({{"type", "content_block_stop"}, {"index", index_}});
  open_ = block::none;
}

void anthropic_stream::delta(ojson d) {
  out_ += anthropic_event({{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(d)}});
}

void anthropic_stream::thinking(const std::string& t) {
  if (t.empty()) return;
  if (open_ != block::thinking) open(block::thinking, thinking_block(""));
  delta({{"type", "thinking_delta"}, {"thinking", t}});
}

void anthropic_stream::text(const std::string& t) {
  if (t.empty()) return;
  if (open_ != block::text) open(block::text, text_block(""));
  delta({{"type", "text_delta"}, {"text", t}});
}

void anthropic_stream::call(const std::string& name) {
  open(block::tool_use, tool_use_block(name, ojson::object()));
  ++calls_;
}

void anthropic_stream::input(const std::string& json_piece) {
  if (!json_piece.empty()) delta({{"type", "input_json_delta"}, {"partial_json", json_piece}});
}

// Content (the text after any reasoning): text, or a forced choice's calls as they come.
void anthropic_stream::content(const std::string& t) {
  if (reading_.options.mode == tool_mode::named) {
    if (t.empty()) return;
    if (calls_ == 0) call(reading_.options.function);
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

std::string anthropic_stream::start() {
  const ojson usage = anthropic_usage(n_prompt_tokens_, 0, 0);
  out_ += anthropic_event({{"type", "message_start"}, {"message", message_json(new_message_id(), model_, ojson::array(), "", "", usage)}});
  out_ += anthropic_event({{"type", "ping"}});
  return take();
}

std::string anthropic_stream::push(std::string_view piece) {
  reply_parts parts{{}, std::string(piece)};
  if (splitter_) parts = splitter_->push(piece);
  thinking(parts.reasoning);
  content(parts.content);
  return take();
}

// What the splitter and gate held, the calls read at the end, and the message's close.
std::string anthropic_stream::finish(const job& j) {
  if (splitter_) {
    const reply_parts rest = splitter_->finish();
    splitter_.reset();
    thinking(rest.reasoning);
    content(rest.content);
  }
  bool has_calls = calls_ > 0;
  if (reading_.options.mode == tool_mode::named) {
    if (calls_ == 0) call(reading_.options.function);  // no arguments came: the call still does
    has_calls = true;
  }
  if (gate_) {
    const parsed_reply reply = read_tool_reply(reading_.options, reading_.syntax, gate_->text());
    text(gate_->finish(reply));
    for (const tool_call& c : reply.calls) {
      call(c.name);
      input(c.arguments);
    }
    has_calls = !reply.calls.empty();
  }
  if (required_ && calls_ == 0) text(read_tool_reply(reading_.options, reading_.syntax, required_->text()).content);
  close();
  std::string matched;
  const std::string reason = stop_reason_of(j, has_calls, stop_sequences_, matched);
  out_ += anthropic_event({{"type", "message_delta"},
                           {"delta", {{"stop_reason", reason}, {"stop_sequence", matched.empty() ? ojson() : ojson(matched)}}},
                           {"usage", anthropic_usage(j.n_prompt, j.n_reused, j.n_generated)}});
  out_ += anthropic_event({{"type", "message_stop"}});
  return take();
}

std::string anthropic_stream::error(const api_error& e) {
  close();
  out_ += "event: error\ndata: " + anthropic_error_json(e) + "\n\n";
  return take();
}

}  // namespace glia::server
