#include "server/anthropic_stream.h"

#include "server/anthropic_responses.h"

namespace glia::server {

using ojson = nlohmann::ordered_json;

namespace {

// Local reasoning has no signature (Anthropic's signs its own so that it can be passed back unaltered).
ojson block_start(const block_event& e) {
  switch (e.kind) {
    case block_kind::reasoning: return {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}};
    case block_kind::text: return {{"type", "text"}, {"text", ""}};
    case block_kind::call: break;
  }
  return {{"type", "tool_use"}, {"id", new_tool_use_id()}, {"name", e.text}, {"input", ojson::object()}};
}

ojson block_delta(const block_event& e) {
  switch (e.kind) {
    case block_kind::reasoning: return {{"type", "thinking_delta"}, {"thinking", e.text}};
    case block_kind::text: return {{"type", "text_delta"}, {"text", e.text}};
    case block_kind::call: break;
  }
  return {{"type", "input_json_delta"}, {"partial_json", e.text}};
}

// A call's input: its arguments when they are a whole object; {} for arguments cut short (by
// max_tokens, which the stop reason then says), as a stream's deltas would not parse either.
ojson call_input(const std::string& arguments) {
  ojson input = ojson::parse(arguments, nullptr, false);
  return input.is_object() ? input : ojson::object();
}

}  // namespace

anthropic_stream::anthropic_stream(const reply_reading& reading, std::vector<std::string> stop_sequences, std::string model, int n_prompt)
    : blocks_(reading), stop_sequences_(std::move(stop_sequences)), model_(std::move(model)), n_prompt_(n_prompt) {}

std::optional<std::string> anthropic_stream::start(const job& j, bool now) {
  const int reused = j.n_reused.load();
  if (reused < 0 && !now) return std::nullopt;
  return start(n_prompt_, reused);
}

std::string anthropic_stream::keep_alive() const { return anthropic_event({{"type", "ping"}}); }

std::string anthropic_stream::events(const std::vector<block_event>& blocks) {
  std::string out;
  for (const block_event& e : blocks) {
    switch (e.action) {
      case block_event::what::open:
        out += anthropic_event({{"type", "content_block_start"}, {"index", ++index_}, {"content_block", block_start(e)}});
        break;
      case block_event::what::add:
        out += anthropic_event({{"type", "content_block_delta"}, {"index", index_}, {"delta", block_delta(e)}});
        break;
      case block_event::what::close: out += anthropic_event({{"type", "content_block_stop"}, {"index", index_}}); break;
    }
  }
  return out;
}

std::string anthropic_stream::start(int n_prompt, int n_reused) {
  const ojson usage = anthropic_usage(n_prompt, n_reused, 0);
  return anthropic_event({{"type", "message_start"}, {"message", message_json(new_message_id(), model_, ojson::array(), "", "", usage)}}) +
         anthropic_event({{"type", "ping"}});
}

std::string anthropic_stream::push(std::string_view piece) { return events(blocks_.push(piece)); }

std::string anthropic_stream::finish(const job& j) {
  std::string out = events(blocks_.finish());
  std::string matched;
  const std::string reason = stop_reason_of(j, blocks_.calls_complete(), stop_sequences_, matched);
  out += anthropic_event({{"type", "message_delta"},
                          {"delta", {{"stop_reason", reason}, {"stop_sequence", matched.empty() ? ojson() : ojson(matched)}}},
                          {"usage", anthropic_usage(j.n_prompt, j.n_reused, j.n_generated)}});
  out += anthropic_event({{"type", "message_stop"}});
  return out;
}

std::string anthropic_stream::error(const api_error& e) {
  std::string out = events(blocks_.cut());
  out += "event: error\ndata: " + anthropic_error_json(e) + "\n\n";
  return out;
}

ojson anthropic_message(const reply_reading& reading, const std::vector<std::string>& stop_sequences, const std::string& model,
                        const std::string& reply, const job& j) {
  reply_blocks blocks(reading);
  std::vector<block_event> events = blocks.push(reply);
  for (block_event& e : blocks.finish()) events.push_back(std::move(e));
  ojson content = ojson::array();
  for (const reply_block& b : fold_blocks(events)) {
    switch (b.kind) {
      case block_kind::reasoning: content.push_back({{"type", "thinking"}, {"thinking", b.text}, {"signature", ""}}); break;
      case block_kind::text: content.push_back({{"type", "text"}, {"text", b.text}}); break;
      case block_kind::call:
        content.push_back({{"type", "tool_use"}, {"id", new_tool_use_id()}, {"name", b.name}, {"input", call_input(b.text)}});
        break;
    }
  }
  std::string matched;
  const std::string reason = stop_reason_of(j, blocks.calls_complete(), stop_sequences, matched);
  return message_json(new_message_id(), model, std::move(content), reason, matched, anthropic_usage(j.n_prompt, j.n_reused, j.n_generated));
}

}  // namespace glia::server
