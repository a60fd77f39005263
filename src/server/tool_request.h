// The tool fields of a chat request, as OpenAI defines them and vLLM and llama-server take them:
// "tools" (function definitions), "tool_choice" ("none", "auto", "required" or one named function)
// and "parallel_tool_calls"; and the tool parts of messages (an assistant's "tool_calls", the "tool"
// role's results). A forced choice (required, named) constrains the reply to bare JSON, as vLLM
// does: an array of {"name", "parameters"} objects, or the named function's arguments.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sampler/params.h"
#include "server/request_fields.h"
#include "server/tool_calls.h"

namespace glia::server {

enum class tool_mode { none, automatic, required, named };

struct tool_options {
  nlohmann::ordered_json tools;  // the definitions as the client wrote them (null: none given)
  tool_mode mode = tool_mode::none;
  std::string function;          // tool_mode::named: its name
  bool parallel = true;          // parallel_tool_calls: more than one call per reply
  // Whether the reply is read for calls.
  bool reads_calls() const { return mode != tool_mode::none; }
  bool forced() const { return mode == tool_mode::required || mode == tool_mode::named; }
};

// Reads tools, tool_choice and parallel_tool_calls; for a forced choice sets s.grammar (a 400 when
// another field already constrains the output, or when tools come with one in automatic mode, which
// would keep calls from being written). `body` is the request's text, for the definitions' order.
field_error read_tool_options(const nlohmann::json& obj, std::string_view body, sampler_params& s, tool_options& out);

// The tool parts of one message `m` (role already checked, "developer" mapped) into the template's
// message `msg`: an assistant's tool_calls (arguments given as JSON text become objects, as templates
// read them), a tool result's tool_call_id.
field_error read_message_tool_fields(const nlohmann::json& m, const std::string& role, nlohmann::ordered_json& msg);

// Mistral's templates refuse call ids that are not 9 letters or digits; OpenAI's are "call_..." and
// other servers' longer still. For a template with Mistral's syntax, every other id in the messages
// (an assistant's calls, the tool results) becomes 9 characters derived from it, the same for the
// same id, so a call and its result still match (vLLM shortens them too).
void fit_call_ids(tool_syntax syntax, nlohmann::ordered_json& messages);

// A finished reply read for calls as the options ask: a named function's arguments (the whole
// reply), `required`'s bare JSON, or the model's own syntax. A reply that does not read as calls (or
// calls a function not among the tools) is content, whole; with parallel_tool_calls false only the
// first call is kept.
parsed_reply read_tool_reply(const tool_options& o, tool_syntax syntax, std::string_view text);

}  // namespace glia::server
