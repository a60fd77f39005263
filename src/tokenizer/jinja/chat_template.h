// Chat templates as Hugging Face applies them: where they are stored (GGUF metadata, an HF
// tokenizer folder) and the variables a render sees (messages, tools, documents,
// add_generation_prompt, the special tokens, extra keyword arguments).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "tokenizer/jinja/jinja.h"

namespace glia {
namespace gguf {
class file;
}

namespace jinja {

// Special tokens by variable name ("bos_token", "eos_token", ...). nullopt: the tokenizer leaves it
// unset (Qwen's tokenizer_config has "bos_token": null), and the variable stays undefined.
using special_tokens = std::vector<std::pair<std::string, std::optional<std::string>>>;

struct chat_inputs {
  json messages = json::array();  // OpenAI-style: [{"role": ..., "content": ...}, ...]
  json tools;                     // null or an array of tool definitions
  bool add_generation_prompt = false;
  special_tokens tokens;
  json extra = json::object();    // more variables; they override the special tokens (HF's kwargs)
  render_options options;         // limits and the clock strftime_now reads
};

// The variables HF passes to a chat template, as one JSON object.
result<json> chat_variables(const chat_inputs& in);

result<std::string> render_chat(const compiled_template& t, const chat_inputs& in);
result<std::string> render_chat(std::string_view template_source, const chat_inputs& in);

// Whether a template shows a system message (Gemma 1/2's and Mistral v0.1's raise on one), found by
// rendering one with the model's special tokens (templates add bos_token to text, which fails while
// it is undefined).
bool shows_system_role(const compiled_template& t, const special_tokens& tokens);
// For a template without one, as llama.cpp polyfills it: each system message's text opens the next
// user message (after a blank line, as Gemma 3's template joins them itself), or becomes a user
// message where no user message follows it at once.
json system_text_to_user(json messages);

// Whether a template refuses two user messages in a row (Gemma's, Llama 2's and Mistral's raise
// "roles must alternate"), which clients send (Codex opens with several; a tool-less history may
// hold them).
bool requires_alternating_roles(const compiled_template& t, const special_tokens& tokens);
// For such a template: consecutive user messages (and system messages, and assistant messages without
// calls) become one, their texts joined by a blank line.
json join_consecutive_turns(json messages);

// The templates a model ships with and the special-token texts they are rendered with.
struct chat_template_set {
  std::string default_template;                            // empty when the model has none
  std::vector<std::pair<std::string, std::string>> named;  // e.g. {"tool_use", ...}
  special_tokens tokens;

  // `name` empty: HF's choice (the "tool_use" template when tools are given and it exists, else the
  // default). Returns nullptr when there is no such template.
  const std::string* select(std::string_view name = {}, bool has_tools = false) const;
};

// From GGUF metadata: tokenizer.chat_template and tokenizer.chat_template.<name>; bos/eos/unk/pad
// texts from tokenizer.ggml.tokens at the tokenizer.ggml.*_token_id ids.
result<chat_template_set> load_chat_templates(const gguf::file& f);
result<chat_template_set> load_chat_templates_gguf(const std::string& path);

// From an HF tokenizer folder: tokenizer_config.json's chat_template (a string or a list of
// {name, template}), overridden by chat_template.jinja or chat_template.json when present, with
// additional_chat_templates/*.jinja; bos/eos/unk/pad_token as
// strings or {"content": ...} objects (None when absent or null).
result<chat_template_set> load_chat_templates_hf(const std::string& dir);
// The same from the files' texts: the template is chat_template.jinja's, else chat_template.json's
// "chat_template" (the processor's file of multimodal repositories), else tokenizer_config.json's;
// additional_chat_templates/NAME.jinja are named ones (newer transformers).
struct hf_template_texts {
  std::string config = "{}";            // tokenizer_config.json
  std::optional<std::string> jinja;     // chat_template.jinja
  std::optional<std::string> json;      // chat_template.json
  std::vector<std::pair<std::string, std::string>> named;  // NAME, additional_chat_templates/NAME.jinja
};
result<chat_template_set> load_chat_templates_hf_texts(const hf_template_texts& texts);

}  // namespace jinja
}  // namespace glia
