// Tool calls in a model's reply: how the model's chat template says it writes them (its syntax),
// and the reading of a finished reply into content and calls. The syntaxes are those of the model
// families glia runs, as their templates write earlier calls back (and as vLLM's tool parsers and
// llama-server read them):
//   hermes       <tool_call>{"name": ..., "arguments": {...}}</tool_call> ... (Qwen 2.5/3, QwQ, Hermes)
//   llama3_json  {"name": ..., "parameters": {...}} as the whole reply, optionally after
//                <|python_tag|>; several joined by "; " (Llama 3.1-3.3)
//   mistral_list [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] (Mistral Nemo and older)
//   mistral_args [TOOL_CALLS]name[ARGS]{...} [TOOL_CALLS]... (Mistral Small 3.2 and newer)
//   gemma4       <|tool_call>call:name{key:value,...}<tool_call|> ... (Gemma 4's own value notation)
// A reply that does not read as calls in the model's syntax is content, whole.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glia::server {

enum class tool_syntax { none, hermes, llama3_json, mistral_list, mistral_args, gemma4 };

// From the chat template's source: none when the template never writes a tool call.
tool_syntax tool_syntax_of(std::string_view template_source);
// Whether the template reads the `tools` variable at all (else tools given to it would be lost).
bool template_reads_tools(std::string_view template_source);

struct tool_call {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object, as text
};

struct parsed_reply {
  std::string content;  // the text before the calls (all of it when there are none)
  std::vector<tool_call> calls;
};

// Reads a finished reply. Ids are new (tool_call_id_for). With calls, content is the text before the
// first one, without the whitespace that separated them.
parsed_reply parse_tool_reply(tool_syntax syntax, std::string_view text);

// Where in `text` the calls could start: the offset of the syntax's opening marker (or of the first
// character, for llama3_json's bare JSON), npos when the text so far holds none. `maybe_at` is set to
// the start of a trailing part that could still grow into the marker. Markers are looked for from
// `from` on: a streaming caller's text before it is known to hold none, and calls never start inside
// a reply's reasoning (see think_close_end).
size_t tool_calls_start(tool_syntax syntax, std::string_view text, size_t from, size_t& maybe_at);

// Reasoning may mention a marker, so calls are looked for only after a reply's first </think>
// (its end, found from scan_from on; npos when there is none yet), and not at all while a reply that
// opened with <think> has not closed it. (Not for llama3_json, whose calls are the whole reply.)
size_t think_close_end(std::string_view text, size_t scan_from);
bool opens_thinking(std::string_view text);
// Where a trailing part of `text` that could grow into </think> starts (text.size() when none).
size_t partial_think_close_at(std::string_view text);

// The texts of the syntax's markers, which some models write as control tokens.
std::vector<std::string> tool_marker_tokens(tool_syntax syntax);

// A new id for a call: "call_" and 24 letters or digits; Mistral's templates require exactly 9.
std::string new_tool_call_id(tool_syntax syntax);

// The reply of a forced `required` choice, written as bare JSON (vLLM's way): an array of
// {"name", "parameters"} objects. nullopt when the text is not that (cut short by max_tokens). (A
// named function's reply is its arguments, as they come: see read_tool_reply.)
std::optional<std::vector<tool_call>> parse_required_calls(tool_syntax syntax, std::string_view text);

}  // namespace glia::server
