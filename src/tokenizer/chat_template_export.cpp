#include "tokenizer/chat_template_export.h"

#include <string>
#include <utility>
#include <vector>

#include "gguf/hf_keys.h"
#include "tokenizer/jinja/chat_template.h"
#include "tokenizer/utf8.h"

namespace glia::tok {

status write_ggml_chat_templates(const gguf::file& in, gguf::writer& out) {
  if (in.find("tokenizer.chat_template") || !gguf::hf_tokenizer_rules(in)) return {};
  GLIA_ASSIGN(const jinja::chat_template_set templates, jinja::load_chat_templates(in));
  // The default as glia selects it: a template named "default" where there is no other.
  const std::string* default_template = templates.select();
  // Named ones as the converter names them (characters other than ASCII letters and digits become
  // "_"), listed in tokenizer.chat_templates.
  std::vector<std::pair<std::string, const std::string*>> named;
  for (const auto& [name, text] : templates.named) {
    if (&text == default_template) continue;
    if (name.empty()) continue;
    std::string clean;
    for (size_t i = 0; i < name.size(); i += utf8_lead_length(uint8_t(name[i]))) {
      const char c = name[i];
      clean += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
    }
    for (const auto& [other, unused] : named)
      if (other == clean) return make_error("two of its chat templates would both be tokenizer.chat_template.{}", clean);
    named.emplace_back(std::move(clean), &text);
  }
  if (default_template && !default_template->empty()) out.set_string("tokenizer.chat_template", *default_template);
  std::vector<std::string> names;
  for (const auto& [name, text] : named) {
    out.set_string("tokenizer.chat_template." + name, *text);
    names.push_back(name);
  }
  if (!names.empty()) out.set_string_array("tokenizer.chat_templates", names);
  return {};
}

}  // namespace glia::tok
