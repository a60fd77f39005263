#include "server/responses_api_request.h"

#include <fmt/core.h>

#include <set>

#include "core/json_text.h"
#include "server/request_fields.h"
#include "server/request_grammar.h"

namespace glia::server {
namespace {

using ojson = nlohmann::ordered_json;

// The Responses API's fields (glia's sampling extensions are taken too).
const std::set<std::string> own_fields = {"model",       "input",          "instructions", "max_output_tokens", "temperature", "top_p",
                                          "tools",       "tool_choice",    "parallel_tool_calls", "stream",  "text",        "reasoning",
                                          "metadata",    "store",          "user",         "truncation",        "include",     "service_tier",
                                          "background",  "previous_response_id", "conversation", "prompt", "prompt_cache_key",
                                          "safety_identifier", "max_tool_calls", "top_logprobs", "stream_options",
                                          "client_metadata", "prompt_cache_retention"};
field_error check_fields(const ojson& a) {
  for (const auto& [k, v] : a.items())
    if (!own_fields.count(k) && !is_sampling_extension(k))
      return bad_request(fmt::format("unknown or unsupported field '{}'", shown(k)), k);
  // What would need a store of earlier responses, or a server-side prompt.
  for (const char* k : {"previous_response_id", "conversation", "prompt"})
    if (a.contains(k) && !a[k].is_null())
      return bad_request(fmt::format("'{}' is not supported: glia stores no responses; send the conversation as 'input'", k), k);
  if (a.contains("background") && a["background"] == true) return bad_request("'background' is not supported", "background");
  if (a.contains("store") && !a["store"].is_null() && !a["store"].is_boolean()) return bad_request("'store' must be a boolean", "store");
  if (a.contains("truncation") && !a["truncation"].is_null() && a["truncation"] != "disabled")
    return bad_request("'truncation' must be \"disabled\": an input longer than the context is refused", "truncation");
  if (a.contains("top_logprobs") && !a["top_logprobs"].is_null() && a["top_logprobs"] != 0)
    return bad_request("'top_logprobs' is not supported on /v1/responses (use /v1/chat/completions)", "top_logprobs");
  return std::nullopt;
}

// A message's content: a string, or parts of text (input_text, output_text; a refusal's text).
field_error content_text(const ojson& content, std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request(fmt::format("a message's 'content' must be a string or an array of parts, got {}", json_type_name(content)), "input");
  bool first = true;
  for (const auto& p : content) {
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) return bad_request("each content part needs a string 'type'", "input");
    const std::string type = p["type"].get<std::string>();
    const char* key = type == "input_text" || type == "output_text" ? "text" : type == "refusal" ? "refusal" : nullptr;
    if (!key)
      return bad_request(fmt::format("content part type \"{}\" is not supported (input_text, output_text, refusal)", shown(type)), "input");
    if (!p.contains(key) || !p[key].is_string()) return bad_request(fmt::format("a '{}' part needs a string '{}'", type, key), "input");
    if (!first) out += '\n';
    out += p[key].get<std::string>();
    first = false;
  }
  return std::nullopt;
}

field_error item_string(const ojson& item, const char* key, std::string& out) {
  auto it = item.find(key);
  if (it == item.end() || !it->is_string())
    return bad_request(fmt::format("a '{}' item needs a string '{}'", item.value("type", std::string("message")), key), "input");
  out = it->get<std::string>();
  return std::nullopt;
}

// The input items as chat messages. A turn's calls join the assistant message before them; reasoning
// goes with the assistant message or calls after it.
field_error read_input(const ojson& a, ojson& out) {
  auto it = a.find("input");
  if (it == a.end() || it->is_null()) return bad_request("'input' is required", "input");
  if (it->is_string()) {
    out.push_back({{"role", "user"}, {"content", *it}});
    return std::nullopt;
  }
  if (!it->is_array()) return bad_request(fmt::format("'input' must be a string or an array of items, got {}", json_type_name(*it)), "input");
  if (it->empty()) return bad_request("'input' must not be empty", "input");
  // Reasoning items wait for the assistant message or call they came before; one before a user's,
  // system's or tool's item (a reply that was only reasoning) is dropped.
  std::string reasoning;
  const auto assistant_turn = [&]() -> ojson& {
    if (out.empty() || out.back()["role"] != "assistant") out.push_back({{"role", "assistant"}, {"content", ""}});
    ojson& turn = out.back();
    if (!reasoning.empty()) {
      const std::string before = turn.value("reasoning_content", std::string());
      turn["reasoning_content"] = before.empty() ? reasoning : before + "\n" + reasoning;
      reasoning.clear();
    }
    return turn;
  };
  for (const auto& item : *it) {
    if (!item.is_object()) return bad_request(fmt::format("each input item must be an object, got {}", json_type_name(item)), "input");
    const std::string type = item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>() : "message";
    if (type == "message") {
      std::string role, text;
      GLIA_FIELD(item_string(item, "role", role));
      if (role == "developer") role = "system";
      if (role != "system" && role != "user" && role != "assistant")
        return bad_request(fmt::format("message role '{}' is not supported (system, developer, user, assistant)", shown(role)), "input");
      if (!item.contains("content")) return bad_request("a message item needs 'content'", "input");
      GLIA_FIELD(content_text(item["content"], text));
      if (role == "assistant") {
        ojson& turn = assistant_turn();
        // An assistant message after the turn's calls starts a new turn.
        if (turn.contains("tool_calls")) {
          out.push_back({{"role", "assistant"}, {"content", text}});
        } else {
          std::string joined = turn["content"].get<std::string>();
          turn["content"] = joined.empty() ? text : joined + "\n" + text;
        }
      } else {
        reasoning.clear();
        // Instructions and the system or developer messages before the conversation are one system
        // message: many templates take only one.
        if (role == "system" && !out.empty() && out.back()["role"] == "system" && out.size() == 1)
          out.back()["content"] = out.back()["content"].get<std::string>() + "\n\n" + text;
        else
          out.push_back({{"role", role}, {"content", text}});
      }
    } else if (type == "function_call") {
      std::string id, name, arguments;
      GLIA_FIELD(item_string(item, "call_id", id));
      GLIA_FIELD(item_string(item, "name", name));
      GLIA_FIELD(item_string(item, "arguments", arguments));
      ojson& turn = assistant_turn();
      turn["tool_calls"].push_back({{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}});
    } else if (type == "function_call_output") {
      std::string id, output;
      GLIA_FIELD(item_string(item, "call_id", id));
      if (!item.contains("output")) return bad_request("a 'function_call_output' item needs an 'output'", "input");
      GLIA_FIELD(content_text(item["output"], output));
      reasoning.clear();
      out.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", output}});
    } else if (type == "reasoning") {
      // Its text (gpt-oss and vLLM give it as content, OpenAI's own models as summary); encrypted
      // content is another server's.
      std::string text;
      for (const char* key : {"content", "summary"}) {
        auto parts = item.find(key);
        if (parts == item.end() || !parts->is_array()) continue;
        for (const auto& p : *parts)
          if (p.is_object() && p.contains("text") && p["text"].is_string()) text += (text.empty() ? "" : "\n") + p["text"].get<std::string>();
        if (!text.empty()) break;
      }
      if (!text.empty()) reasoning += (reasoning.empty() ? "" : "\n") + text;
    } else {
      return bad_request(fmt::format("input item type \"{}\" is not supported (message, function_call, function_call_output, reasoning)",
                                     shown(type)),
                         "input");
    }
  }
  return std::nullopt;
}

field_error read_tools(const ojson& a, ojson& o) {
  auto it = a.find("tools");
  if (it == a.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return bad_request(fmt::format("'tools' must be an array, got {}", json_type_name(*it)), "tools");
  if (it->empty()) return std::nullopt;
  ojson tools = ojson::array();
  for (const auto& t : *it) {
    if (!t.is_object()) return bad_request(fmt::format("each tool must be an object, got {}", json_type_name(t)), "tools");
    if (t.value("type", ojson()) != "function")
      return bad_request(fmt::format("tool type {} is not supported: only function tools (hosted tools run on OpenAI's side)",
                                     t.contains("type") ? t["type"].dump() : "(none)"),
                         "tools");
    ojson f = ojson::object();
    for (const auto& [k, v] : t.items()) {
      if (k == "type") continue;
      if (k != "name" && k != "description" && k != "parameters" && k != "strict")
        return bad_request(fmt::format("tool field '{}' is not supported", shown(k)), "tools");
      if (!v.is_null()) f[k] = v;
    }
    tools.push_back({{"type", "function"}, {"function", std::move(f)}});
  }
  o["tools"] = std::move(tools);
  return std::nullopt;
}

field_error read_tool_choice(const ojson& a, ojson& o) {
  auto it = a.find("tool_choice");
  if (it == a.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    o["tool_choice"] = *it;  // none, auto, required: as the chat endpoint reads them
    return std::nullopt;
  }
  if (!it->is_object() || it->value("type", ojson()) != "function" || !it->contains("name") || !(*it)["name"].is_string())
    return bad_request("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}", "tool_choice");
  o["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*it)["name"]}}}};
  return std::nullopt;
}

// text.format as the chat endpoint's response_format; text.verbosity is a hint for OpenAI's models.
field_error read_text(const ojson& a, ojson& o) {
  const ojson* it = nullptr;
  GLIA_FIELD(optional_object(a, "text", it));
  if (!it) return std::nullopt;
  for (const auto& [k, v] : it->items())
    if (k != "format" && k != "verbosity") return bad_request(fmt::format("unknown field 'text.{}'", shown(k)), "text");
  auto f = it->find("format");
  if (f == it->end() || f->is_null()) return std::nullopt;
  if (!f->is_object() || !f->contains("type") || !(*f)["type"].is_string())
    return bad_request("'text.format' must be an object with a 'type' (text, json_object, json_schema)", "text");
  const std::string type = (*f)["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  for (const char* c : output_constraint_fields)
    if (o.contains(c)) return bad_request(fmt::format("give one of 'text.format' and '{}'", c), "text");
  if (type == "json_object") {
    o["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    ojson js = ojson::object();
    for (const auto& [k, v] : f->items())
      if (k != "type") js[k] = v;
    o["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
  } else {
    return bad_request(fmt::format("'text.format.type' must be \"text\", \"json_object\" or \"json_schema\", got \"{}\"", shown(type)), "text");
  }
  return std::nullopt;
}

field_error read_reasoning(const ojson& a, ojson& o) {
  const ojson* it = nullptr;
  GLIA_FIELD(optional_object(a, "reasoning", it));
  if (!it) return std::nullopt;
  for (const auto& [k, v] : it->items()) {
    // summary: OpenAI's models summarize their reasoning; a local model's is given whole.
    if (k == "summary" || k == "generate_summary") continue;
    if (k != "effort") return bad_request(fmt::format("unknown field 'reasoning.{}'", shown(k)), "reasoning");
    if (v.is_null()) continue;
    if (!v.is_string()) return bad_request("'reasoning.effort' must be a string", "reasoning");
    o["reasoning_effort"] = v == "xhigh" ? ojson("high") : v;
  }
  return std::nullopt;
}

// What a response object repeats of the request (OpenAI's defaults where it gave none).
ojson settings_of(const ojson& a, const completion_request& r) {
  ojson s = ojson::object();
  auto given = [&](const char* k, ojson fallback) { return a.contains(k) && !a[k].is_null() ? a[k] : fallback; };
  s["instructions"] = given("instructions", nullptr);
  s["max_output_tokens"] = given("max_output_tokens", nullptr);
  s["metadata"] = given("metadata", ojson::object());
  s["parallel_tool_calls"] = r.tools.parallel;
  s["reasoning"] = {{"effort", a.contains("reasoning") && a["reasoning"].is_object() ? a["reasoning"].value("effort", ojson()) : ojson()},
                    {"summary", nullptr}};
  // As the client wrote them, not float's nearest double (0.949999988 for 0.95).
  const auto shortest = [](float v) { return std::stod(fmt::format("{}", v)); };
  s["temperature"] = shortest(r.params.sampling.temperature);
  s["text"] = a.contains("text") && a["text"].is_object() ? a["text"] : ojson::object();
  if (!s["text"].contains("format") || s["text"]["format"].is_null()) s["text"]["format"] = {{"type", "text"}};
  s["tool_choice"] = given("tool_choice", "auto");
  s["tools"] = given("tools", ojson::array());
  s["top_p"] = shortest(r.params.sampling.top_p);
  s["truncation"] = "disabled";
  s["user"] = given("user", nullptr);
  s["store"] = false;  // nothing is kept
  return s;
}

field_error translate(const ojson& a, ojson& o) {
  GLIA_FIELD(check_fields(a));
  for (const char* k : {"model", "temperature", "top_p", "parallel_tool_calls", "stream", "user", "service_tier"})
    if (a.contains(k)) o[k] = a[k];
  for (const auto& [k, v] : a.items())
    if (is_sampling_extension(k)) o[k] = v;
  if (auto m = a.find("max_output_tokens"); m != a.end() && !m->is_null()) {
    if (!m->is_number_integer() || m->get<int64_t>() < 1)
      return bad_request(fmt::format("'max_output_tokens' must be a positive integer, got {}", m->dump()), "max_output_tokens");
    o["max_tokens"] = *m;
  }
  if (auto m = a.find("metadata"); m != a.end() && !m->is_null() && !m->is_object())
    return bad_request(fmt::format("'metadata' must be an object, got {}", json_type_name(*m)), "metadata");
  ojson messages = ojson::array();
  if (auto ins = a.find("instructions"); ins != a.end() && !ins->is_null()) {
    if (!ins->is_string()) return bad_request(fmt::format("'instructions' must be a string, got {}", json_type_name(*ins)), "instructions");
    messages.push_back({{"role", "system"}, {"content", *ins}});
  }
  GLIA_FIELD(read_input(a, messages));
  o["messages"] = std::move(messages);
  GLIA_FIELD(read_tools(a, o));
  GLIA_FIELD(read_tool_choice(a, o));
  GLIA_FIELD(read_text(a, o));
  GLIA_FIELD(read_reasoning(a, o));
  return std::nullopt;
}

}  // namespace

api_error in_responses_api_terms(api_error e) {
  static const std::pair<std::string_view, std::string_view> params[] = {
      {"messages", "input"}, {"max_tokens", "max_output_tokens"}, {"response_format", "text"}, {"reasoning_effort", "reasoning"}};
  for (const auto& [chat, responses] : params)
    if (e.param == chat) e.param = responses;
  static const std::pair<std::string_view, std::string_view> terms[] = {
      {"'max_tokens'", "'max_output_tokens'"}, {"'response_format.json_schema'", "'text.format'"}, {"'response_format'", "'text.format'"},
      {"'reasoning_effort'", "'reasoning.effort'"}, {".function.parameters", ".parameters"}, {".function.description", ".description"},
      {".function.name", ".name"}, {".function'", "'"}};
  for (const auto& [chat, responses] : terms)
    for (size_t at = e.message.find(chat); at != std::string::npos; at = e.message.find(chat, at + responses.size()))
      e.message.replace(at, chat.size(), responses);
  return e;
}

api_result<responses_api_request> parse_responses_api_request(std::string_view body, const sampler_params& defaults) {
  auto checked = parse_json_object(body);  // UTF-8, depth and JSON errors, as the other endpoints word them
  if (!checked.ok()) return checked.error();
  const ojson a = ojson::parse(body);
  ojson o = ojson::object();
  if (auto e = translate(a, o)) return *e;
  auto chat = parse_chat_request(ordered_json_text(o), defaults);
  if (!chat.ok()) return in_responses_api_terms(chat.error());
  responses_api_request r{std::move(chat.value()), {}};
  r.settings = settings_of(a, r.chat);
  return r;
}

}  // namespace glia::server
