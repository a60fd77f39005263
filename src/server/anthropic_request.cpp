#include "server/anthropic_request.h"

#include <fmt/core.h>

#include <set>

#include "core/json_text.h"
#include "server/request_fields.h"
#include "server/request_grammar.h"

namespace glia::server {
namespace {

using ojson = nlohmann::ordered_json;

// Anthropic's own fields (glia's sampling extensions are taken too).
const std::set<std::string> anthropic_fields = {"model",       "messages", "max_tokens", "system",   "stop_sequences", "stream",
                                                "temperature", "top_p",    "top_k",      "tools",    "tool_choice",    "thinking",
                                                "metadata",    "service_tier", "output_config", "context_management", "cache_control"};
field_error check_fields(const ojson& a) {
  for (const auto& [k, v] : a.items())
    if (!anthropic_fields.count(k) && !is_sampling_extension(k))
      // Anthropic's wording, which clients (Claude Code) match to retry without a field a server lacks.
      return bad_request(fmt::format("{}: Extra inputs are not permitted (glia does not know or support this field)", shown(k)), k);
  return std::nullopt;
}

// The text of a list of blocks that may only be text ({"type": "text", "text"}), joined by newlines.
field_error text_of_blocks(const ojson& blocks, const char* where, std::string& out) {
  if (blocks.is_string()) {
    out = blocks.get<std::string>();
    return std::nullopt;
  }
  if (!blocks.is_array()) return bad_request(fmt::format("'{}' must be a string or an array of text blocks, got {}", where, json_type_name(blocks)), where);
  bool first = true;
  for (const auto& b : blocks) {
    if (!b.is_object() || !b.contains("type") || b["type"] != "text")
      return bad_request(fmt::format("'{}' may only hold text blocks, got {}", where, b.is_object() && b.contains("type") ? b["type"].dump() : json_type_name(b)),
                         where);
    if (!b.contains("text") || !b["text"].is_string()) return bad_request(fmt::format("a text block in '{}' needs a string 'text'", where), where);
    if (!first) out += '\n';
    out += b["text"].get<std::string>();
    first = false;
  }
  return std::nullopt;
}

// A block's string field.
field_error block_string(const ojson& b, const char* key, const char* block_type, std::string& out) {
  auto it = b.find(key);
  if (it == b.end() || !it->is_string())
    return bad_request(fmt::format("a '{}' block needs a string '{}'", block_type, key), "messages");
  out = it->get<std::string>();
  return std::nullopt;
}

void append_line(std::string& to, const std::string& text) {
  if (!to.empty()) to += '\n';
  to += text;
}

// One turn's blocks (the role's consecutive messages put together) as chat messages: a user turn's
// tool results come first, each a "tool" message, then its text; an assistant turn is one message
// with its text, reasoning and calls.
field_error add_turn(const std::string& role, const ojson& blocks, ojson& out) {
  std::string text, reasoning;
  bool has_text = false;
  ojson calls = ojson::array();
  for (const auto& b : blocks) {
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
      return bad_request("each content block must be an object with a string 'type'", "messages");
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      std::string t;
      GLIA_FIELD(block_string(b, "text", "text", t));
      append_line(text, t);
      has_text = true;
    } else if (type == "tool_result" && role == "user") {
      // Anthropic's rule: a turn's results come before its text (the template shows them in that order).
      if (has_text) return bad_request("a user turn's tool_result blocks must come before its text", "messages");
      std::string id, result;
      GLIA_FIELD(block_string(b, "tool_use_id", "tool_result", id));
      if (auto c = b.find("content"); c != b.end() && !c->is_null()) GLIA_FIELD(text_of_blocks(*c, "tool_result.content", result));
      // Templates have no field for a failed call: the model is told in the text.
      if (auto e = b.find("is_error"); e != b.end() && !e->is_null()) {
        if (!e->is_boolean()) return bad_request("'tool_result.is_error' must be a boolean", "messages");
        if (e->get<bool>()) result = "Error: " + result;
      }
      out.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", result}});
    } else if (type == "tool_use" && role == "assistant") {
      std::string id, name;
      GLIA_FIELD(block_string(b, "id", "tool_use", id));
      GLIA_FIELD(block_string(b, "name", "tool_use", name));
      auto input = b.find("input");
      if (input == b.end() || !input->is_object()) return bad_request("a 'tool_use' block needs an object 'input'", "messages");
      calls.push_back({{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", ordered_json_text(*input)}}}});
    } else if (type == "thinking" && role == "assistant") {
      std::string t;
      GLIA_FIELD(block_string(b, "thinking", "thinking", t));
      append_line(reasoning, t);
    } else if (type == "redacted_thinking" && role == "assistant") {
      // Another server's encrypted reasoning: nothing a local model could read.
    } else {
      return bad_request(fmt::format("a {} message's content block of type \"{}\" is not supported (text, tool_use, tool_result, thinking)",
                                     role, shown(type)),
                         "messages");
    }
  }
  if (role == "user") {
    if (has_text || out.empty() || out.back()["role"] != "tool") out.push_back({{"role", "user"}, {"content", text}});
    return std::nullopt;
  }
  ojson msg = {{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
  out.push_back(std::move(msg));
  return std::nullopt;
}

field_error read_messages(const ojson& a, ojson& out) {
  auto it = a.find("messages");
  if (it == a.end()) return bad_request("'messages' is required", "messages");
  if (!it->is_array()) return bad_request(fmt::format("'messages' must be an array, got {}", json_type_name(*it)), "messages");
  if (it->empty()) return bad_request("'messages' must not be empty", "messages");
  std::string role;
  ojson blocks = ojson::array();
  for (const auto& m : *it) {
    if (!m.is_object()) return bad_request(fmt::format("each message must be an object, got {}", json_type_name(m)), "messages");
    for (const auto& [k, v] : m.items())
      if (k != "role" && k != "content") return bad_request(fmt::format("message field '{}' is not supported", shown(k)), "messages");
    auto r = m.find("role");
    if (r == m.end() || !r->is_string() || (*r != "user" && *r != "assistant"))
      return bad_request("each message needs a 'role' of \"user\" or \"assistant\" (the system prompt is the top-level 'system')", "messages");
    auto content = m.find("content");
    if (content == m.end() || (!content->is_string() && !content->is_array()))
      return bad_request("each message needs a 'content' string or array of content blocks", "messages");
    if (!role.empty() && *r != role) {
      GLIA_FIELD(add_turn(role, blocks, out));
      blocks = ojson::array();
    }
    role = r->get<std::string>();
    if (content->is_string()) blocks.push_back({{"type", "text"}, {"text", *content}});
    else
      for (const auto& b : *content) blocks.push_back(b);
  }
  return add_turn(role, blocks, out);
}

// Anthropic's tool definitions as OpenAI's function tools.
field_error read_tools(const ojson& a, ojson& o) {
  auto it = a.find("tools");
  if (it == a.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return bad_request(fmt::format("'tools' must be an array, got {}", json_type_name(*it)), "tools");
  if (it->empty()) return std::nullopt;
  ojson tools = ojson::array();
  for (const auto& t : *it) {
    if (!t.is_object()) return bad_request(fmt::format("each tool must be an object, got {}", json_type_name(t)), "tools");
    if (auto type = t.find("type"); type != t.end() && !type->is_null() && *type != "custom")
      return bad_request(fmt::format("tool type {} is not supported: only client tools with an 'input_schema' (Anthropic's server and "
                                     "built-in tools run on Anthropic's side)",
                                     type->dump()),
                         "tools");
    // strict: the input always follows the schema here; the others are hints to Anthropic's servers.
    static const std::set<std::string> tool_fields = {"type", "name", "description", "input_schema", "cache_control", "strict",
                                                      "eager_input_streaming", "defer_loading", "input_examples"};
    for (const auto& [k, v] : t.items())
      if (!tool_fields.contains(k)) return bad_request(fmt::format("tool field '{}' is not supported", shown(k)), "tools");
    auto name = t.find("name");
    if (name == t.end() || !name->is_string()) return bad_request("each tool needs a string 'name'", "tools");
    auto schema = t.find("input_schema");
    if (schema == t.end() || !schema->is_object()) return bad_request("each tool needs an object 'input_schema'", "tools");
    ojson f = {{"name", *name}};
    if (auto d = t.find("description"); d != t.end() && !d->is_null()) {
      if (!d->is_string()) return bad_request(fmt::format("a tool's 'description' must be a string, got {}", json_type_name(*d)), "tools");
      f["description"] = *d;
    }
    f["parameters"] = *schema;
    tools.push_back({{"type", "function"}, {"function", std::move(f)}});
  }
  o["tools"] = std::move(tools);
  return std::nullopt;
}

// An optional member that must be an object with a string 'type' (`types` lists them for the
// error): `it` is null when it is absent or null.
field_error typed_object(const ojson& a, const char* key, const char* types, const ojson*& it, std::string& type) {
  it = nullptr;
  auto m = a.find(key);
  if (m == a.end() || m->is_null()) return std::nullopt;
  if (!m->is_object() || !m->contains("type") || !(*m)["type"].is_string())
    return bad_request(fmt::format("'{}' must be an object with a 'type' ({})", key, types), key);
  it = &*m;
  type = (*m)["type"].get<std::string>();
  return std::nullopt;
}

field_error read_tool_choice(const ojson& a, ojson& o) {
  const ojson* it = nullptr;
  std::string type;
  GLIA_FIELD(typed_object(a, "tool_choice", "auto, any, tool or none", it, type));
  if (!it) return std::nullopt;
  for (const auto& [k, v] : it->items())
    if (k != "type" && k != "name" && k != "disable_parallel_tool_use")
      return bad_request(fmt::format("unknown field 'tool_choice.{}'", shown(k)), "tool_choice");
  if (type == "auto") o["tool_choice"] = "auto";
  else if (type == "any") o["tool_choice"] = "required";
  else if (type == "none") o["tool_choice"] = "none";
  else if (type == "tool") {
    auto name = it->find("name");
    if (name == it->end() || !name->is_string()) return bad_request("'tool_choice' of type \"tool\" needs a string 'name'", "tool_choice");
    o["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  } else {
    return bad_request(fmt::format("'tool_choice.type' must be \"auto\", \"any\", \"tool\" or \"none\", got \"{}\"", shown(type)), "tool_choice");
  }
  if (auto p = it->find("disable_parallel_tool_use"); p != it->end() && !p->is_null()) {
    if (!p->is_boolean()) return bad_request("'tool_choice.disable_parallel_tool_use' must be a boolean", "tool_choice");
    if (type != "none") o["parallel_tool_calls"] = !p->get<bool>();
  }
  return std::nullopt;
}

// thinking {"type": "enabled", "budget_tokens"}, {"type": "adaptive"} (the model decides how much: what
// newer Claude models take) or {"type": "disabled"}: the template's enable_thinking (Qwen3's switch),
// and the reasoning budget (thinking_budget_tokens; disabled: 0, so that a model whose template always
// opens its reasoning closes it at once).
field_error read_thinking(const ojson& a, ojson& kwargs, ojson& o) {
  const ojson* it = nullptr;
  std::string type;
  GLIA_FIELD(typed_object(a, "thinking", "enabled, adaptive or disabled", it, type));
  if (!it) return std::nullopt;
  if (type != "enabled" && type != "adaptive" && type != "disabled")
    return bad_request(fmt::format("'thinking.type' must be \"enabled\", \"adaptive\" or \"disabled\", got \"{}\"", shown(type)), "thinking");
  for (const auto& [k, v] : it->items())
    // display: whether Anthropic's own models summarize or omit their thinking; a local model's is shown whole.
    if (k != "type" && k != "display" && !(k == "budget_tokens" && type == "enabled"))
      return bad_request(fmt::format("unknown field 'thinking.{}'", shown(k)), "thinking");
  if (type == "enabled") {
    auto b = it->find("budget_tokens");
    if (b == it->end() || !b->is_number_integer() || b->get<int64_t>() < 1 || b->get<int64_t>() > INT32_MAX)
      return bad_request("'thinking' of type \"enabled\" needs a positive integer 'budget_tokens'", "thinking");
    o["thinking_budget_tokens"] = *b;
  }
  if (type == "disabled") o["thinking_budget_tokens"] = 0;
  if (!kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = type != "disabled";
  return std::nullopt;
}

// output_config {"effort", "format"}: the effort is the template's reasoning_effort (as the chat
// endpoint's; Claude's max and xhigh are high), a json_schema format the response_format.
field_error read_output_config(const ojson& a, ojson& o) {
  const ojson* it = nullptr;
  GLIA_FIELD(optional_object(a, "output_config", it));
  if (!it) return std::nullopt;
  for (const auto& [k, v] : it->items()) {
    if (v.is_null()) continue;
    if (k == "effort") {
      static const std::set<std::string> efforts = {"low", "medium", "high", "max", "xhigh"};
      if (!v.is_string() || !efforts.contains(v.get<std::string>()))
        return bad_request("'output_config.effort' must be \"low\", \"medium\", \"high\", \"xhigh\" or \"max\"", "output_config");
      const std::string e = v.get<std::string>();
      o["reasoning_effort"] = e == "max" || e == "xhigh" ? "high" : e;
    } else if (k == "format") {
      for (const char* c : output_constraint_fields)
        if (o.contains(c)) return bad_request(fmt::format("give one of 'output_config.format' and '{}'", c), "output_config");
      if (!v.is_object() || v.value("type", ojson()) != "json_schema" || !v.contains("schema"))
        return bad_request("'output_config.format' must be {\"type\": \"json_schema\", \"schema\": {...}}", "output_config");
      o["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "output"}, {"schema", v["schema"]}}}};
    } else {
      return bad_request(fmt::format("unknown field 'output_config.{}'", shown(k)), "output_config");
    }
  }
  return std::nullopt;
}

field_error read_stop_sequences(const ojson& a, std::vector<std::string>& out) {
  auto it = a.find("stop_sequences");
  if (it == a.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return bad_request(fmt::format("'stop_sequences' must be an array of strings, got {}", json_type_name(*it)), "stop_sequences");
  if (it->size() > 128) return bad_request(fmt::format("'stop_sequences' has {} strings, at most 128 are allowed", it->size()), "stop_sequences");
  for (const auto& s : *it) {
    if (!s.is_string() || s.get<std::string>().empty())
      return bad_request("'stop_sequences' entries must be non-empty strings", "stop_sequences");
    out.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

// The chat body the request stands for.
field_error translate(const ojson& a, bool counting, ojson& o, std::vector<std::string>& stops) {
  GLIA_FIELD(check_fields(a));
  if (auto m = a.find("metadata"); m != a.end() && !m->is_null() && !m->is_object())
    return bad_request(fmt::format("'metadata' must be an object, got {}", json_type_name(*m)), "metadata");
  for (const auto& [k, v] : a.items())
    if (k != "system" && k != "messages" && k != "stop_sequences" && k != "tools" && k != "tool_choice" && k != "thinking" &&
        k != "metadata" && k != "max_tokens" && k != "output_config" && k != "context_management" && k != "cache_control")
      o[k] = v;
  if (!counting) {
    auto mt = a.find("max_tokens");
    if (mt == a.end() || mt->is_null()) return bad_request("'max_tokens' is required", "max_tokens");
    if (!mt->is_number_integer() || mt->get<int64_t>() < 1)
      return bad_request(fmt::format("'max_tokens' must be a positive integer, got {}", mt->dump()), "max_tokens");
    o["max_tokens"] = *mt;
  }
  ojson messages = ojson::array();
  if (auto s = a.find("system"); s != a.end() && !s->is_null()) {
    std::string text;
    GLIA_FIELD(text_of_blocks(*s, "system", text));
    messages.push_back({{"role", "system"}, {"content", text}});
  }
  GLIA_FIELD(read_messages(a, messages));
  GLIA_FIELD(read_stop_sequences(a, stops));
  if (!stops.empty()) o["stop"] = stops;
  GLIA_FIELD(read_tools(a, o));
  GLIA_FIELD(read_tool_choice(a, o));
  if (o.contains("tool_choice") && !o.contains("tools") && o["tool_choice"] != "none")
    return bad_request("'tool_choice' needs 'tools'", "tool_choice");
  ojson kwargs = o.contains("chat_template_kwargs") && o["chat_template_kwargs"].is_object() ? o["chat_template_kwargs"] : ojson::object();
  GLIA_FIELD(read_thinking(a, kwargs, o));
  GLIA_FIELD(read_output_config(a, o));
  if (!kwargs.empty()) o["chat_template_kwargs"] = std::move(kwargs);
  // A final assistant message is a prefill: the reply continues it, as Anthropic's does; one with no
  // text (Anthropic allows it empty) asks for an ordinary reply.
  if (messages.back()["role"] == "assistant" && messages.back()["content"] == "" && !messages.back().contains("tool_calls"))
    messages.erase(messages.size() - 1);
  if (messages.empty()) return bad_request("'messages' holds no turn but an empty assistant message", "messages");
  if (messages.back()["role"] == "assistant") {
    if (messages.back().contains("tool_calls")) return bad_request("the final message may not be an assistant's tool_use", "messages");
    if (o.contains("tools") && o.value("tool_choice", ojson("auto")) != "none")
      return bad_request("a reply that continues a final assistant message is not read for tool calls; set 'tool_choice' to "
                         "{\"type\": \"none\"} or end with a user message",
                         "messages");
    o["continue_final_message"] = true;
  }
  o["messages"] = std::move(messages);
  return std::nullopt;
}

}  // namespace

api_error in_anthropic_terms(api_error e) {
  static const std::pair<std::string_view, std::string_view> terms[] = {
      {".function.parameters", ".input_schema"},
      {".function.description", ".description"},
      {".function.name", ".name"},
      {"'tool_choice' to \"none\"", "'tool_choice' to {\"type\": \"none\"}"},
      {"'tool_choice' \"required\" or a named function", "'tool_choice' {\"type\": \"any\"} or {\"type\": \"tool\", \"name\": ...}"},
      {"'tool_choice' \"required\"", "'tool_choice' {\"type\": \"any\"}"},
      {"use \"auto\" or name one", "use {\"type\": \"auto\"} or name one"},
      {"a response format or grammar", "output_config.format or a grammar"},
  };
  for (const auto& [openai, anthropic] : terms)
    for (size_t at = e.message.find(openai); at != std::string::npos; at = e.message.find(openai, at + anthropic.size()))
      e.message.replace(at, openai.size(), anthropic);
  return e;
}

api_result<messages_request> parse_messages_request(std::string_view body, const sampler_params& defaults, bool counting) {
  auto checked = parse_json_object(body);  // UTF-8, depth and JSON errors, as the other endpoints word them
  if (!checked.ok()) return checked.error();
  const ojson a = ojson::parse(body);
  ojson o = ojson::object();
  messages_request r;
  if (auto e = translate(a, counting, o, r.stop_sequences)) return *e;
  auto chat = parse_chat_request(ordered_json_text(o), defaults);
  if (!chat.ok()) return in_anthropic_terms(chat.error());
  r.chat = std::move(chat.value());
  return r;
}

}  // namespace glia::server
