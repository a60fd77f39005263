// Fuzzes chat-template rendering: a random template with random message JSON, through the Jinja
// interpreter with its budgets (steps, call depth, nesting, output size). Every input must render or
// fail with a one-line error within the budgets: no crash, no hang, no output past the limit.
// Input: template text, then a NUL byte, then JSON (fuzz_make_seeds writes the pack's templates with
// its conversations this way). The JSON is either an array (the messages) or an object whose
// "messages", "tools" and "add_generation_prompt" members are those inputs and whose other members
// are extra variables. Without a NUL (or with JSON that does not parse) a fixed conversation is used.
#include <string>
#include <string_view>

#include "core/json_depth.h"
#include "fuzz_support.h"
#include "tokenizer/jinja/chat_template.h"

namespace {

using glia::jinja::json;

const json& default_messages() {
  static const json m = json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hello! What is 2+2?"},
    {"role": "assistant", "content": "4", "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
    {"role": "tool", "content": "4"},
    {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}
  ])");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace glia;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);

  jinja::chat_inputs in;
  in.messages = default_messages();
  in.tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", std::nullopt}};
  // Small budgets keep each input fast; what is tested is that they are enforced, not their size.
  in.options.limits.max_steps = 200'000;
  in.options.limits.max_output_bytes = size_t(1) << 20;
  in.options.now = jinja::civil_time{2024, 7, 26, 12, 0, 0};
  if (nul != std::string_view::npos) {
    const std::string_view text = input.substr(nul + 1);
    if (json_nesting_depth(text) <= 512) {
      json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_array()) {
        in.messages = std::move(j);
      } else if (j.is_object()) {
        for (auto& [k, v] : j.items()) {
          if (k == "messages") in.messages = v;
          else if (k == "tools") in.tools = v;
          else if (k == "add_generation_prompt") in.add_generation_prompt = v.is_boolean() && v.get<bool>();
          else in.extra[k] = v;
        }
      }
    }
  }

  auto compiled = jinja::compiled_template::compile(source, in.options.limits);
  if (!compiled) {
    fuzz::require_one_line(compiled.message());
    return 0;
  }
  for (bool gen : {false, true}) {
    in.add_generation_prompt = gen;
    auto out = jinja::render_chat(*compiled, in);
    if (!out) {
      fuzz::require_one_line(out.message());
      continue;
    }
    fuzz::require(out->size() <= in.options.limits.max_output_bytes, "output larger than max_output_bytes");
  }
  return 0;
}
