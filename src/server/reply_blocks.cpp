#include "server/reply_blocks.h"

#include <nlohmann/json.hpp>

namespace glia::server {

reply_blocks::reply_blocks(const reply_reading& reading) : reading_(reading) {
  if (reading_.reasoning) splitter_.emplace(*reading_.reasoning, reading_.start, reading_.before);
  if (reading_.options.mode == tool_mode::required) required_.emplace(reading_.options.parallel ? SIZE_MAX : 1);
  else if (reading_.options.mode == tool_mode::automatic) gate_.emplace(reading_.syntax);
}

void reply_blocks::open(block_kind kind, std::string name) {
  close();
  open_ = kind;
  out_.push_back({block_event::what::open, kind, std::move(name)});
}

void reply_blocks::close() {
  if (!open_) return;
  out_.push_back({block_event::what::close, *open_, {}});
  open_.reset();
}

void reply_blocks::add(block_kind kind, const std::string& text) {
  if (text.empty()) return;
  if (open_ != kind) open(kind);
  out_.push_back({block_event::what::add, kind, text});
}

void reply_blocks::call(const std::string& name) {
  open(block_kind::call, name);
  calls_.emplace_back();
}

void reply_blocks::arguments(const std::string& text) {
  if (text.empty()) return;
  calls_.back() += text;
  out_.push_back({block_event::what::add, block_kind::call, text});
}

// Content (the text after any reasoning): text, or a forced choice's calls as they come.
void reply_blocks::content(const std::string& text) {
  if (reading_.options.mode == tool_mode::named) {
    if (text.empty()) return;
    if (calls_.empty()) call(reading_.options.function);
    return arguments(text);
  }
  if (required_) {
    for (const call_piece& p : required_->push(text)) {
      if (p.name) call(*p.name);
      arguments(p.arguments);
    }
    return;
  }
  add(block_kind::text, gate_ ? gate_->push(text) : text);
}

std::vector<block_event> reply_blocks::push(std::string_view piece) {
  reply_parts parts{{}, std::string(piece)};
  if (splitter_) parts = splitter_->push(piece);
  add(block_kind::reasoning, parts.reasoning);
  content(parts.content);
  return std::exchange(out_, {});
}

std::vector<block_event> reply_blocks::finish() {
  if (splitter_) {
    const reply_parts rest = splitter_->finish();
    splitter_.reset();
    add(block_kind::reasoning, rest.reasoning);
    content(rest.content);
  }
  // A named function is called even when no arguments came.
  if (reading_.options.mode == tool_mode::named && calls_.empty()) call(reading_.options.function);
  if (gate_) {
    const parsed_reply reply = read_tool_reply(reading_.options, reading_.syntax, gate_->text());
    add(block_kind::text, gate_->finish(reply));
    for (const tool_call& c : reply.calls) {
      call(c.name);
      arguments(c.arguments);
    }
  }
  // A forced reply cut before a call opened is text.
  if (required_ && calls_.empty()) add(block_kind::text, read_tool_reply(reading_.options, reading_.syntax, required_->text()).content);
  close();
  return std::exchange(out_, {});
}

std::vector<block_event> reply_blocks::cut() {
  close();
  return std::exchange(out_, {});
}

bool reply_blocks::calls_complete() const {
  if (calls_.empty()) return false;
  for (const std::string& a : calls_) {
    const auto j = nlohmann::json::parse(a, nullptr, false);
    if (!j.is_object()) return false;
  }
  return true;
}

std::vector<reply_block> fold_blocks(const std::vector<block_event>& events) {
  std::vector<reply_block> out;
  for (const block_event& e : events) {
    if (e.action == block_event::what::open) out.push_back({e.kind, {}, e.kind == block_kind::call ? e.text : std::string()});
    else if (e.action == block_event::what::add && !out.empty()) out.back().text += e.text;
  }
  return out;
}

}  // namespace glia::server
