#include "server/responses.h"

#include <chrono>
#include <random>

#include <fmt/core.h>

namespace glia::server {

using nlohmann::json;

response_meta new_response_meta(bool chat, const std::string& model) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  response_meta m;
  m.chat = chat;
  m.model = model;
  m.id = fmt::format("{}-{:016x}", chat ? "chatcmpl" : "cmpl", rng());
  m.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return m;
}

const char* finish_reason_name(finish_kind k) {
  return k == finish_kind::length ? "length" : k == finish_kind::tool_calls ? "tool_calls" : "stop";
}

json usage_json(int n_prompt, int n_generated, int n_reasoning) {
  json u = {{"prompt_tokens", n_prompt}, {"completion_tokens", n_generated}, {"total_tokens", n_prompt + n_generated}};
  if (n_reasoning >= 0) u["completion_tokens_details"] = {{"reasoning_tokens", n_reasoning}};
  return u;
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

}  // namespace

json logprobs_json(bool chat, const std::vector<token_logprob>& lps) {
  if (chat) {
    json content = json::array();
    for (const auto& lp : lps) {
      json top = json::array();
      for (const auto& [tok, l] : lp.top) top.push_back({{"token", tok}, {"logprob", l}, {"bytes", bytes_of(tok)}});
      content.push_back({{"token", lp.token}, {"logprob", lp.logprob}, {"bytes", bytes_of(lp.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& lp : lps) {
    tokens.push_back(lp.token);
    offsets.push_back(lp.text_offset);
    if (!lp.scored) {  // an echoed prompt's first token: null, as OpenAI and vLLM give it
      token_lps.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    token_lps.push_back(lp.logprob);
    // The legacy format always lists the sampled token too (up to logprobs + 1 entries).
    json top = json::object();
    for (const auto& [tok, l] : lp.top) top[tok] = l;
    top[lp.token] = lp.logprob;
    tops.push_back(top);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

namespace {

json tool_calls_json(const std::vector<tool_call>& calls, bool indexed) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id}, {"type", "function"}, {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (indexed) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

json completion_json(const response_meta& m, const std::string& text, const std::vector<token_logprob>* lps,
                     finish_kind reason, int n_prompt, int n_generated, const std::vector<tool_call>& calls,
                     const std::string& reasoning) {
  json choice = {{"index", m.choice_index}, {"finish_reason", finish_reason_name(reason)}};
  choice["logprobs"] = lps ? logprobs_json(m.chat, *lps) : json();
  if (m.chat && !calls.empty())
    choice["message"] = {{"role", "assistant"}, {"content", text.empty() ? json() : json(text)}, {"tool_calls", tool_calls_json(calls, false)}};
  else if (m.chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  if (m.chat && !reasoning.empty()) choice["message"]["reasoning_content"] = reasoning;
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({choice})},
          {"usage", usage_json(n_prompt, n_generated)}};
}

json chunk_json(const response_meta& m, const std::string& text, const std::vector<token_logprob>* lps, bool role_delta,
                finish_kind finish, bool include_usage) {
  json choice = {{"index", m.choice_index}};
  if (m.chat) {
    json delta = json::object();
    if (role_delta) delta["role"] = "assistant";
    if (!text.empty() || finish == finish_kind::none) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = lps && !lps->empty() ? logprobs_json(m.chat, *lps) : json();
  choice["finish_reason"] = finish == finish_kind::none ? json() : json(finish_reason_name(finish));
  json c = {{"id", m.id},
            {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array({choice})}};
  if (include_usage) c["usage"] = nullptr;
  return c;
}

json reasoning_chunk_json(const response_meta& m, const std::string& reasoning, const std::vector<token_logprob>* lps,
                          bool role_delta, bool include_usage) {
  json c = chunk_json(m, "", lps, role_delta, finish_kind::none, include_usage);
  json& delta = c["choices"][0]["delta"];
  delta.erase("content");
  delta["reasoning_content"] = reasoning;
  return c;
}

json tool_calls_chunk_json(const response_meta& m, const std::vector<tool_call>& calls, bool role_delta, bool include_usage) {
  json c = chunk_json(m, "", nullptr, role_delta, finish_kind::none, include_usage);
  json& delta = c["choices"][0]["delta"];
  delta.erase("content");
  delta["tool_calls"] = tool_calls_json(calls, true);
  return c;
}

json usage_chunk_json(const response_meta& m, json usage) {
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array()},
          {"usage", std::move(usage)}};
}

}  // namespace glia::server
