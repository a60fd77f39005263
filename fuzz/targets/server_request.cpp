// Fuzzes the server's request parsing and validation: any bytes as the body of POST
// /v1/chat/completions, /v1/completions, /v1/messages (Anthropic's) or /v1/responses (the first
// byte's two low bits choose which; with its third bit set, llama-server's /completion or /infill
// instead; the rest is the body). Every
// body must give either a validated request or a 4xx api_error with a one-line message naming what
// is wrong, never an exception, a crash or a hang; the error must serialize to OpenAI's JSON shape.
// Accepted requests must hold what the scheduler relies on (bounded counts, messages as an array).
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "sampler/params.h"
#include "server/anthropic_request.h"
#include "server/native_request.h"
#include "server/request.h"
#include "server/responses_api_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glia;
  if (size == 0) return 0;
  const int endpoint = data[0] & 3;
  const bool native = (data[0] & 4) != 0;
  const bool chat = endpoint != 1 && !native;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const sampler_params defaults{};
  const auto parse = [&]() -> server::api_result<server::completion_request> {
    if (native && endpoint % 2 == 0) {
      auto n = server::parse_native_request(body, defaults);
      if (!n.ok()) return n.error();
      return std::move(n.value().r);
    }
    if (native) {
      auto n = server::parse_infill_request(body, defaults);
      if (!n.ok()) return n.error();
      return std::move(n.value().first.r);
    }
    switch (endpoint) {
      case 0: return server::parse_chat_request(body, defaults);
      case 1: return server::parse_completion_request(body, defaults);
      case 2: {
        auto m = server::parse_messages_request(body, defaults);
        if (!m.ok()) return m.error();
        return std::move(m.value().chat);
      }
      default: {
        auto m = server::parse_responses_api_request(body, defaults);
        if (!m.ok()) return m.error();
        return std::move(m.value().chat);
      }
    }
  };
  auto r = parse();
  if (!r.ok()) {
    const server::api_error& e = r.error();
    fuzz::require(e.status >= 400 && e.status < 500, "request error is not a 4xx", e.message);
    fuzz::require_one_line(e.message);
    const auto j = nlohmann::json::parse(e.to_json(), nullptr, false);
    fuzz::require(!j.is_discarded() && j.contains("error") && j["error"].contains("message"),
                  "error JSON is not OpenAI's shape", e.to_json());
    return 0;
  }
  const server::completion_request& req = r.value();
  fuzz::require(req.chat == chat, "request kind changed");
  if (chat) fuzz::require(req.messages.is_array(), "chat messages are not an array");
  fuzz::require(req.params.top_logprobs >= 0 && req.params.top_logprobs <= (native ? 100 : 20), "top_logprobs out of range");
  fuzz::require(req.params.max_tokens >= -1, "max_tokens below -1");
  return 0;
}
