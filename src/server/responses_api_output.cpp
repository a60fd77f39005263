#include "server/responses_api_output.h"

#include <algorithm>
#include <chrono>

#include "core/json_text.h"
#include "server/random_id.h"
#include "server/sse.h"

namespace glia::server {

using ojson = nlohmann::ordered_json;

namespace {

ojson new_item(const block_event& open) {
  switch (open.kind) {
    case block_kind::reasoning: return {{"id", random_id("rs_", 24)}, {"type", "reasoning"}, {"summary", ojson::array()}, {"content", ojson::array()}};
    case block_kind::text:
      return {{"id", random_id("msg_", 24)}, {"type", "message"}, {"status", "in_progress"}, {"role", "assistant"}, {"content", ojson::array()}};
    case block_kind::call: break;
  }
  return {{"id", random_id("fc_", 24)}, {"type", "function_call"}, {"status", "in_progress"}, {"arguments", ""},
          {"call_id", random_id("call_", 24)}, {"name", open.text}};
}

ojson empty_part(block_kind kind) {
  if (kind == block_kind::reasoning) return {{"type", "reasoning_text"}, {"text", ""}};
  return {{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}};
}

// Adds a piece to an item (its part's text, or its arguments).
void add_to_item(ojson& item, const std::string& piece) {
  if (item["type"] == "function_call") item["arguments"] = item["arguments"].get<std::string>() + piece;
  else item["content"][0]["text"] = item["content"][0]["text"].get<std::string>() + piece;
}

// An item is completed, or incomplete where the reply was cut inside it (a call's arguments that do
// not make an object yet, text cut by max_output_tokens).
void close_item(ojson& item, bool cut) {
  if (!item.contains("status")) return;
  const bool whole_call = item["type"] == "function_call" && nlohmann::json::parse(item["arguments"].get<std::string>(), nullptr, false).is_object();
  item["status"] = cut && !whole_call ? "incomplete" : "completed";
}

// Whether the reply ended as a complete response (incomplete: cut by max_output_tokens or the
// context, unless it was whole calls).
bool incomplete(const reply_blocks& blocks, const job& j) { return j.reason == finish_kind::length && !blocks.calls_complete(); }

ojson usage_of(const job& j) {
  return {{"input_tokens", j.n_prompt},
          {"input_tokens_details", {{"cached_tokens", std::max(j.n_reused.load(), 0)}}},
          {"output_tokens", j.n_generated},
          {"output_tokens_details", {{"reasoning_tokens", j.n_reasoning}}},
          {"total_tokens", j.n_prompt + j.n_generated}};
}

// The response object; status in_progress has no usage yet.
ojson response_object(const response_head& h, const std::string& status, bool cut, ojson output, ojson usage, ojson error = nullptr) {
  ojson r = {{"id", h.id}, {"object", "response"}, {"created_at", h.created_at}, {"status", status}, {"background", false},
             {"error", std::move(error)}};
  r["incomplete_details"] = cut ? ojson{{"reason", "max_output_tokens"}} : ojson();
  for (const auto& [k, v] : h.settings.items()) r[k] = v;
  r["model"] = h.model;
  r["output"] = std::move(output);
  r["previous_response_id"] = nullptr;
  r["service_tier"] = "default";
  r["usage"] = std::move(usage);
  return r;
}

}  // namespace

response_head new_response_head(std::string model, ojson settings) {
  response_head h;
  h.id = random_id("resp_", 32);
  h.created_at = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.model = std::move(model);
  h.settings = std::move(settings);
  return h;
}

responses_api_stream::responses_api_stream(const reply_reading& reading, response_head head) : blocks_(reading), head_(std::move(head)) {}

std::string responses_api_stream::event(ojson e) {
  e["sequence_number"] = sequence_++;
  return "event: " + e["type"].get<std::string>() + "\ndata: " + ordered_json_text(e) + "\n\n";
}

std::string responses_api_stream::start() {
  const ojson r = response_object(head_, "in_progress", false, ojson::array(), nullptr);
  std::string out = event({{"type", "response.created"}, {"response", r}});
  return out + event({{"type", "response.in_progress"}, {"response", r}});
}

std::string responses_api_stream::events(const std::vector<block_event>& blocks, bool cut) {
  std::string out;
  size_t last_close = blocks.size();
  for (size_t i = 0; i < blocks.size(); ++i)
    if (blocks[i].action == block_event::what::close) last_close = i;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const block_event& b = blocks[i];
    const int index = int(output_.size()) - (b.action == block_event::what::open ? 0 : 1);
    if (b.action == block_event::what::open) {
      output_.push_back(new_item(b));
      out += event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", output_.back()}});
      if (b.kind != block_kind::call) {
        output_.back()["content"].push_back(empty_part(b.kind));
        out += event({{"type", "response.content_part.added"}, {"item_id", output_.back()["id"]}, {"output_index", index}, {"content_index", 0},
                      {"part", empty_part(b.kind)}});
      }
      continue;
    }
    ojson& item = output_[size_t(index)];
    const char* delta_type = b.kind == block_kind::call        ? "response.function_call_arguments.delta"
                             : b.kind == block_kind::reasoning ? "response.reasoning_text.delta"
                                                               : "response.output_text.delta";
    if (b.action == block_event::what::add) {
      add_to_item(item, b.text);
      ojson e = {{"type", delta_type}, {"item_id", item["id"]}, {"output_index", index}};
      if (b.kind != block_kind::call) e["content_index"] = 0;
      e["delta"] = b.text;
      if (b.kind == block_kind::text) e["logprobs"] = ojson::array();
      out += event(std::move(e));
      continue;
    }
    if (b.kind == block_kind::call) {
      out += event({{"type", "response.function_call_arguments.done"}, {"item_id", item["id"]}, {"output_index", index},
                    {"name", item["name"]}, {"arguments", item["arguments"]}});
    } else {
      const ojson& part = item["content"][0];
      ojson done = {{"type", b.kind == block_kind::reasoning ? "response.reasoning_text.done" : "response.output_text.done"},
                    {"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"text", part["text"]}};
      if (b.kind == block_kind::text) done["logprobs"] = ojson::array();
      out += event(std::move(done));
      out += event({{"type", "response.content_part.done"}, {"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    }
    close_item(item, cut && i == last_close);
    out += event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
  }
  return out;
}

std::string responses_api_stream::keep_alive() const { return std::string(sse_keep_alive); }

std::string responses_api_stream::push(std::string_view text) { return events(blocks_.push(text)); }

std::string responses_api_stream::finish(const job& j) {
  std::string out = events(blocks_.finish(), j.reason == finish_kind::length);
  const bool cut = incomplete(blocks_, j);
  const ojson r = response_object(head_, cut ? "incomplete" : "completed", cut, output_, usage_of(j));
  return out + event({{"type", cut ? "response.incomplete" : "response.completed"}, {"response", r}});
}

// The error event, then response.failed: the terminal event clients such as Codex wait for.
std::string responses_api_stream::error(const api_error& e) {
  std::string out = events(blocks_.cut(), true);
  out += responses_api_error_event(e, sequence_++);
  const ojson error = {{"code", e.status >= 500 ? "server_error" : "invalid_request"}, {"message", e.message}};
  return out + event({{"type", "response.failed"}, {"response", response_object(head_, "failed", false, output_, nullptr, error)}});
}

std::string responses_api_error_event(const api_error& e, int sequence_number) {
  const ojson data = {{"type", "error"},
                      {"code", e.status >= 500 ? "server_error" : "invalid_request_error"},
                      {"message", e.message},
                      {"param", nullptr},
                      {"sequence_number", sequence_number}};
  return "event: error\ndata: " + ordered_json_text(data) + "\n\n";
}

ojson responses_api_response(const reply_reading& reading, const response_head& head, const std::string& reply, const job& j) {
  reply_blocks blocks(reading);
  std::vector<block_event> events = blocks.push(reply);
  for (block_event& e : blocks.finish()) events.push_back(std::move(e));
  ojson output = ojson::array();
  for (const reply_block& b : fold_blocks(events)) {
    ojson item = new_item({block_event::what::open, b.kind, b.name});
    if (b.kind != block_kind::call) item["content"].push_back(empty_part(b.kind));
    add_to_item(item, b.text);
    output.push_back(std::move(item));
  }
  for (size_t i = 0; i < output.size(); ++i) close_item(output[i], j.reason == finish_kind::length && i + 1 == output.size());
  const bool cut = incomplete(blocks, j);
  return response_object(head, cut ? "incomplete" : "completed", cut, std::move(output), usage_of(j));
}

}  // namespace glia::server
