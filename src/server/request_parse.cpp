// Parsing of the two generation endpoints' bodies. Fields that would change the result but are not
// supported (tools on /v1/completions, suffix, best_of > 1) get a 400 rather than
// being ignored; so does any field we do not know.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/json_error.h"
#include "core/json_depth.h"
#include "server/request.h"
#include "server/request_fields.h"
#include "server/request_grammar.h"
#include "server/utf8_check.h"

namespace glia::server {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr int64_t max_int32 = std::numeric_limits<int32_t>::max();
// Choices in one request (prompts x n): each is a job in the engine's queue.
constexpr int64_t max_choices = 128;

// Fields every generation request may carry, and those only one endpoint knows.
const std::set<std::string> common_fields = {
    "model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty",
    "frequency_penalty", "repeat_penalty", "logit_bias", "logprobs", "n", "stream", "stream_options",
    "user", "metadata", "store", "service_tier", "tools", "tool_choice",
    "parallel_tool_calls", "functions", "function_call", "repetition_penalty", "ignore_eos",
    "guided_decoding_backend"};
// chat_template_kwargs and add_generation_prompt as vLLM and llama-server take them.
const std::set<std::string> chat_fields = {"messages", "max_completion_tokens", "top_logprobs", "chat_template_kwargs", "reasoning_format",
                                           "reasoning_effort", "add_generation_prompt", "continue_final_message",
                                           "thinking_budget_tokens", "thinking_token_budget", "thinking_budget_message"};
const std::set<std::string> completion_fields = {"prompt", "echo", "suffix", "best_of"};

field_error check_known(const json& obj, const std::set<std::string>& own) {
  static const std::set<std::string> constraint_fields(std::begin(output_constraint_fields), std::end(output_constraint_fields));
  for (const auto& [k, v] : obj.items())
    if (!common_fields.count(k) && !own.count(k) && !constraint_fields.count(k))
      return bad_request(fmt::format("unknown or unsupported field '{}'", shown(k)), k);
  return std::nullopt;
}

field_error unsupported(const json& obj, const char* key, const char* why, const json& harmless = json()) {
  auto it = obj.find(key);
  if (it != obj.end() && !it->is_null() && *it != harmless)
    return bad_request(fmt::format("'{}' is not supported: {}", key, why), key);
  return std::nullopt;
}

field_error read_stop(const json& obj, std::vector<std::string>& out) {
  auto it = obj.find("stop");
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
    return std::nullopt;
  }
  if (!it->is_array()) return bad_request(fmt::format("'stop' must be a string or an array of strings, got {}", json_type_name(*it)), "stop");
  // OpenAI allows 4, llama-server any number; a group chat's client adds one per member.
  if (it->size() > 128) return bad_request(fmt::format("'stop' has {} strings, at most 128 are allowed", it->size()), "stop");
  for (const auto& s : *it) {
    if (!s.is_string()) return bad_request(fmt::format("'stop' entries must be strings, got {}", json_type_name(s)), "stop");
    out.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

field_error read_logit_bias(const json& obj, std::map<int32_t, float>& out) {
  auto it = obj.find("logit_bias");
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return bad_request(fmt::format("'logit_bias' must be an object, got {}", json_type_name(*it)), "logit_bias");
  for (const auto& [k, v] : it->items()) {
    // Keys are token ids written as decimal strings ({"15043": -100}).
    if (k.empty() || k.size() > 9 || k.find_first_not_of("0123456789") != std::string::npos)
      return bad_request(fmt::format("'logit_bias' key '{}' is not a token id", shown(k)), "logit_bias");
    // false bans the token, as llama-server reads it (a bias of -100 only makes it unlikely).
    if (v.is_boolean() && !v.get<bool>()) {
      out[int32_t(std::stol(k))] = -INFINITY;
      continue;
    }
    if (!v.is_number())
      return bad_request(fmt::format("'logit_bias' value for {} must be a number (or false, a ban), got {}", k, json_type_name(v)), "logit_bias");
    const double b = v.get<double>();
    if (!(b >= -100.0 && b <= 100.0)) return bad_request(fmt::format("'logit_bias' value for {} is {}, outside [-100, 100]", k, v.dump()), "logit_bias");
    out[int32_t(std::stol(k))] = float(b);
  }
  return std::nullopt;
}

// Fields shared by both endpoints.
field_error read_common(const json& obj, std::string_view body, const sampler_params& defaults, completion_request& r) {
  std::optional<std::string> model;
  GLIA_FIELD(read_string(obj, "model", model));
  if (model) r.model = *model;
  std::optional<int64_t> n;
  GLIA_FIELD(read_int(obj, "n", 1, max_choices, n));
  r.n = int(n.value_or(1));
  // The legacy spelling of tools (deprecated by OpenAI in 2023): clients send tools now.
  GLIA_FIELD(unsupported(obj, "functions", "use 'tools' (the legacy 'functions' is not read)"));
  GLIA_FIELD(unsupported(obj, "function_call", "use 'tool_choice' (the legacy 'function_call' is not read)"));
  // vLLM's choice of structured-output library: glia has one.
  for (const char* k : {"user", "service_tier", "guided_decoding_backend"}) {
    std::optional<std::string> ignored;
    GLIA_FIELD(read_string(obj, k, ignored));
  }

  generation_params& p = r.params;
  p.sampling = defaults;
  sampler_params& s = p.sampling;
  std::optional<int64_t> i;
  GLIA_FIELD(read_int(obj, "max_tokens", 0, max_int32, i));
  if (i) p.max_tokens = int(*i);
  auto real = [&](const char* key, double lo, double hi, float& field) -> field_error {
    std::optional<double> v;
    if (auto e = read_number(obj, key, lo, hi, v)) return e;
    if (v) field = float(*v);
    return std::nullopt;
  };
  GLIA_FIELD(real("temperature", 0.0, 100.0, s.temperature));
  GLIA_FIELD(real("top_p", 0.0, 1.0, s.top_p));
  GLIA_FIELD(real("min_p", 0.0, 1.0, s.min_p));
  GLIA_FIELD(real("presence_penalty", -2.0, 2.0, s.presence_penalty));
  GLIA_FIELD(real("frequency_penalty", -2.0, 2.0, s.frequency_penalty));
  GLIA_FIELD(real("repeat_penalty", 0.01, 100.0, s.repeat_penalty));
  if (obj.contains("repeat_penalty") && obj.contains("repetition_penalty"))
    return bad_request("give one of 'repeat_penalty' and 'repetition_penalty' (the same setting)", "repetition_penalty");
  // vLLM's and transformers' name for it, applied over the same window (llama.cpp's last 64 tokens;
  // vLLM's covers the whole sequence, but one window serves all three penalties here).
  GLIA_FIELD(real("repetition_penalty", 0.01, 100.0, s.repeat_penalty));
  i.reset();
  GLIA_FIELD(read_int(obj, "top_k", 0, max_int32, i));
  if (i) s.top_k = int(*i);
  i.reset();
  GLIA_FIELD(read_int(obj, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), i));
  // -1 and 4294967295 (llama.cpp's LLAMA_DEFAULT_SEED) ask for a random seed, as llama-server reads them.
  if (i && *i != -1 && *i != 0xFFFFFFFF) {
    s.seed = uint64_t(*i);
    p.seed_given = true;
  }
  GLIA_FIELD(read_stop(obj, p.stop));
  GLIA_FIELD(read_logit_bias(obj, s.logit_bias));
  GLIA_FIELD(read_output_constraint(obj, body, s));
  std::optional<bool> b;
  GLIA_FIELD(read_bool(obj, "ignore_eos", b));
  p.ignore_eos = b.value_or(false);
  b.reset();
  GLIA_FIELD(read_bool(obj, "stream", b));
  p.stream = b.value_or(false);
  if (auto it = obj.find("stream_options"); it != obj.end() && !it->is_null()) {
    if (!it->is_object()) return bad_request(fmt::format("'stream_options' must be an object, got {}", json_type_name(*it)), "stream_options");
    // As OpenAI and vLLM: options of a stream that was not asked for are a mistake worth saying.
    if (!p.stream) return bad_request("'stream_options' is only allowed with \"stream\": true", "stream_options");
    for (const auto& [k, v] : it->items())
      if (k != "include_usage") return bad_request(fmt::format("unknown field 'stream_options.{}'", shown(k)), "stream_options");
    b.reset();
    GLIA_FIELD(read_bool(*it, "include_usage", b));
    p.include_usage = b.value_or(false);
  }
  return std::nullopt;
}

// One chat message's content as text: a string, or an array of {"type": "text", "text": ...} parts.
field_error message_text(const json& content, const std::string& role, std::string& out) {
  if (content.is_null()) {
    if (role == "assistant") return std::nullopt;
    return bad_request(fmt::format("a '{}' message needs 'content'", shown(role)), "messages");
  }
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array())
    return bad_request(fmt::format("message 'content' must be a string or an array of parts, got {}", json_type_name(content)), "messages");
  for (const auto& part : content) {
    if (!part.is_object()) return bad_request("message content parts must be objects", "messages");
    auto type = part.find("type");
    if (type == part.end() || *type != "text")
      return bad_request(fmt::format("content part type {} is not supported (only \"text\")", type == part.end() ? "(none)" : type->dump()), "messages");
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) return bad_request("a text content part needs a string 'text'", "messages");
    if (&part != &content.front()) out += '\n';  // parts on lines of their own, as llama-server and vLLM join them
    out += text->get<std::string>();
  }
  return std::nullopt;
}

field_error read_messages(const json& obj, ojson& out) {
  auto it = obj.find("messages");
  if (it == obj.end()) return bad_request("'messages' is required", "messages");
  if (!it->is_array()) return bad_request(fmt::format("'messages' must be an array, got {}", json_type_name(*it)), "messages");
  if (it->empty()) return bad_request("'messages' must not be empty", "messages");
  out = ojson::array();
  for (const auto& m : *it) {
    if (!m.is_object()) return bad_request(fmt::format("each message must be an object, got {}", json_type_name(m)), "messages");
    // A field this server does not act on is refused, unless it is null or an empty list: the SDKs
    // send an assistant message back as they received it ("tool_calls": null, "audio": null, ...).
    for (const auto& [k, v] : m.items())
      if (k != "role" && k != "content" && k != "name" && k != "refusal" && k != "reasoning_content" && k != "reasoning" && k != "tool_calls" &&
          k != "tool_call_id" && !v.is_null() && !(v.is_array() && v.empty()))
        return bad_request(fmt::format("message field '{}' is not supported", shown(k)), "messages");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return bad_request("each message needs a string 'role'", "messages");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      return bad_request(fmt::format("message role '{}' is not supported (system, developer, user, assistant, tool)", shown(r)), "messages");
    std::string text;
    auto content = m.find("content");
    GLIA_FIELD(message_text(content == m.end() ? json() : *content, r, text));
    ojson msg = {{"role", r}, {"content", text}};
    GLIA_FIELD(read_message_tool_fields(m, r, msg));
    // (An assistant's calls without text get content "", as vLLM and llama-server give them: Qwen3's
    // and QwQ's templates test `'</think>' in content`, which null would fail.)
    // Templates that know participant names (message.name) get it; the others ignore it, as HF's do.
    if (auto name = m.find("name"); name != m.end() && !name->is_null()) {
      if (!name->is_string()) return bad_request(fmt::format("message 'name' must be a string, got {}", json_type_name(*name)), "messages");
      msg["name"] = name->get<std::string>();
    }
    // An assistant turn's reasoning, as vLLM and glia return it and reasoning models' templates read it
    // back (Qwen3's drops it from earlier turns, keeps it in the last): "reasoning_content", or newer
    // vLLM's and OpenRouter's "reasoning" (the templates get it as reasoning_content).
    for (const char* field : {"reasoning_content", "reasoning"}) {
      auto reasoning = m.find(field);
      if (reasoning == m.end() || reasoning->is_null()) continue;
      if (!reasoning->is_string())
        return bad_request(fmt::format("message '{}' must be a string, got {}", field, json_type_name(*reasoning)), "messages");
      if (r != "assistant") return bad_request(fmt::format("only assistant messages carry '{}'", field), "messages");
      if (!msg.contains("reasoning_content")) msg["reasoning_content"] = reasoning->get<std::string>();
    }
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

// One prompt: a string or a list of token ids.
field_error read_one_prompt(const json& p, completion_request::prompt_input& out) {
  if (p.is_string()) {
    out.text = p.get<std::string>();
    return std::nullopt;
  }
  if (p.empty()) return bad_request("'prompt' must not be empty", "prompt");
  for (const auto& t : p) {
    if (t.is_string() || t.is_array()) return bad_request("'prompt' mixes token ids with other values", "prompt");
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > max_int32)
      return bad_request(fmt::format("'prompt' token ids must be integers in [0, {}], got {}", max_int32, t.dump()), "prompt");
    out.ids.push_back(t.get<int64_t>());
  }
  out.is_ids = true;
  return std::nullopt;
}

// OpenAI's four forms: a string, a list of token ids, a list of strings, a list of id lists (the
// last two: several prompts, each its own choices, as lm-evaluation-harness batches them).
field_error read_prompt(const json& obj, completion_request& r) {
  auto it = obj.find("prompt");
  if (it == obj.end() || it->is_null()) return bad_request("'prompt' is required", "prompt");
  const json& p = *it;
  if (!p.is_string() && !p.is_array())
    return bad_request(fmt::format("'prompt' must be a string or an array of token ids, got {}", json_type_name(p)), "prompt");
  const bool several = p.is_array() && !p.empty() && (p[0].is_string() || p[0].is_array());
  if (!several) {
    r.prompts.emplace_back();
    return read_one_prompt(p, r.prompts.back());
  }
  for (const auto& one : p) {
    if (one.type() != p[0].type())
      return bad_request(p[0].is_string() ? "'prompt' mixes strings with other values" : "'prompt' mixes token id lists with other values",
                         "prompt");
    r.prompts.emplace_back();
    GLIA_FIELD(read_one_prompt(one, r.prompts.back()));
  }
  return std::nullopt;
}

}  // namespace

// No OpenAI request needs more than a few levels (tool schemas are the deepest); deeper bodies are
// refused before parsing (see core/json_depth.h).
constexpr size_t max_json_depth = 64;

api_result<json> parse_json_object(std::string_view body) {
  if (size_t bad = find_invalid_utf8(body); bad != std::string_view::npos)
    return bad_request(fmt::format("the request body is not valid UTF-8 (byte offset {})", bad));
  if (const size_t depth = json_nesting_depth(body); depth > max_json_depth)
    return bad_request(fmt::format("the request body nests {} levels deep; the limit is {}", depth, max_json_depth));
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    return bad_request(fmt::format("the request body is not valid JSON: {}", json_error_reason(e.what())));
  }
  if (!j.is_object()) return bad_request(fmt::format("the request body must be a JSON object, got {}", json_type_name(j)));
  return j;
}

api_result<completion_request> parse_chat_request(std::string_view body, const sampler_params& defaults) {
  auto j = parse_json_object(body);
  if (!j.ok()) return j.error();
  const json& obj = j.value();
  completion_request r;
  r.chat = true;
  GLIA_FIELD(check_known(obj, chat_fields));
  GLIA_FIELD(read_common(obj, body, defaults, r));
  GLIA_FIELD(read_tool_options(obj, body, r.params.sampling, r.tools));
  GLIA_FIELD(read_messages(obj, r.messages));
  std::optional<int64_t> i;
  GLIA_FIELD(read_int(obj, "max_completion_tokens", 0, max_int32, i));
  if (i) r.params.max_tokens = int(*i);
  std::optional<bool> lp;
  GLIA_FIELD(read_bool(obj, "logprobs", lp));
  r.params.logprobs = lp.value_or(false);
  i.reset();
  GLIA_FIELD(read_int(obj, "top_logprobs", 0, 20, i));
  if (i) {
    if (!r.params.logprobs) return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    r.params.top_logprobs = int(*i);
  }
  std::optional<bool> gen, cont;
  GLIA_FIELD(read_bool(obj, "add_generation_prompt", gen));
  GLIA_FIELD(read_bool(obj, "continue_final_message", cont));
  r.continue_final_message = cont.value_or(false);
  // vLLM's rules: continuing the final message replaces the generation prompt, and it must be the assistant's.
  if (r.continue_final_message) {
    if (gen.value_or(false))
      return bad_request("'continue_final_message' and 'add_generation_prompt' cannot both be true", "continue_final_message");
    if (r.messages.back()["role"] != "assistant")
      return bad_request("'continue_final_message' needs the last message to be the assistant's", "continue_final_message");
    if (!r.messages.back()["content"].is_string() || r.messages.back().contains("tool_calls"))
      return bad_request("'continue_final_message' needs the last message to have text content and no tool calls", "continue_final_message");
  }
  r.add_generation_prompt = gen.value_or(!r.continue_final_message);
  if (r.continue_final_message && r.tools.reads_calls())
    return bad_request("'continue_final_message' cannot be combined with tool calls (the reply would not start where calls are read); "
                       "set 'tool_choice' to \"none\"",
                       "continue_final_message");
  std::optional<std::string> reasoning;
  GLIA_FIELD(read_string(obj, "reasoning_format", reasoning));
  if (reasoning) {
    if (*reasoning != "none" && *reasoning != "deepseek" && *reasoning != "auto")
      return bad_request(fmt::format("'reasoning_format' must be \"none\", \"deepseek\" or \"auto\", got \"{}\"", shown(*reasoning)),
                         "reasoning_format");
    r.split_reasoning = *reasoning != "none";
  }
  // llama-server's name for the reasoning budget and vLLM's.
  for (const char* field : {"thinking_budget_tokens", "thinking_token_budget"}) {
    std::optional<int64_t> budget;
    GLIA_FIELD(read_int(obj, field, -1, INT32_MAX, budget));
    if (!budget) continue;
    if (r.reasoning_budget && *r.reasoning_budget != int(*budget))
      return bad_request("'thinking_budget_tokens' and 'thinking_token_budget' differ; give one", field);
    r.reasoning_budget = int(*budget);
  }
  GLIA_FIELD(read_string(obj, "thinking_budget_message", r.reasoning_budget_message));
  if (auto it = obj.find("chat_template_kwargs"); it != obj.end() && !it->is_null()) {
    if (!it->is_object())
      return bad_request(fmt::format("'chat_template_kwargs' must be an object, got {}", json_type_name(*it)), "chat_template_kwargs");
    for (const char* reserved : {"messages", "add_generation_prompt", "tools"})
      if (it->contains(reserved))
        return bad_request(fmt::format("'chat_template_kwargs' may not set '{}'", reserved), "chat_template_kwargs");
    r.template_kwargs = *it;
  }
  // OpenAI's reasoning_effort reaches the template as a variable of that name, as vLLM passes it
  // (gpt-oss's template reads it); chat_template_kwargs has the last word.
  std::optional<std::string> effort;
  GLIA_FIELD(read_string(obj, "reasoning_effort", effort));
  if (effort) {
    static const std::set<std::string> efforts = {"none", "minimal", "low", "medium", "high"};
    if (!efforts.contains(*effort))
      return bad_request(fmt::format("'reasoning_effort' must be \"none\", \"minimal\", \"low\", \"medium\" or \"high\", got \"{}\"",
                                     shown(*effort)),
                         "reasoning_effort");
    if (!r.template_kwargs.is_object()) r.template_kwargs = json::object();
    if (!r.template_kwargs.contains("reasoning_effort")) r.template_kwargs["reasoning_effort"] = *effort;
  }
  return r;
}

api_result<completion_request> parse_completion_request(std::string_view body, const sampler_params& defaults) {
  auto j = parse_json_object(body);
  if (!j.ok()) return j.error();
  const json& obj = j.value();
  completion_request r;
  GLIA_FIELD(check_known(obj, completion_fields));
  // An empty tool list and tool_choice "none" (some SDKs always send them) ask for nothing.
  GLIA_FIELD(unsupported(obj, "tools", "tool calls need /v1/chat/completions", json::array()));
  GLIA_FIELD(unsupported(obj, "tool_choice", "tool calls need /v1/chat/completions", "none"));
  GLIA_FIELD(read_common(obj, body, defaults, r));
  GLIA_FIELD(read_prompt(obj, r));
  if (int64_t(r.prompts.size()) * r.n > max_choices)
    return bad_request(fmt::format("{} prompts x n = {} choices; at most {} per request", r.prompts.size(), int64_t(r.prompts.size()) * r.n,
                                   max_choices),
                       r.prompts.size() > 1 ? "prompt" : "n");
  std::optional<int64_t> i;
  // Completions' logprobs is the number of alternatives (0..5) rather than a flag.
  GLIA_FIELD(read_int(obj, "logprobs", 0, 5, i));
  if (i) {
    r.params.logprobs = true;
    r.params.top_logprobs = int(*i);
  }
  std::optional<bool> echo;
  GLIA_FIELD(read_bool(obj, "echo", echo));
  r.params.echo = echo.value_or(false);
  std::optional<std::string> suffix;
  GLIA_FIELD(read_string(obj, "suffix", suffix));
  if (suffix && !suffix->empty()) return bad_request("'suffix' is not supported", "suffix");
  i.reset();
  GLIA_FIELD(read_int(obj, "best_of", 1, max_int32, i));
  if (i && *i != 1) return bad_request(fmt::format("'best_of' is {}: only 1 is supported", *i), "best_of");
  return r;
}

}  // namespace glia::server
