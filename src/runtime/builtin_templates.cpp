#include "runtime/builtin_templates.h"

namespace glia {
namespace {

// Written from each family's published prompt format. Newlines are in string literals so that
// trim_blocks/lstrip_blocks cannot change them.
constexpr builtin_template kTemplates[] = {
    {"chatml",
     "{%- for message in messages -%}"
     "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
     "{%- endfor -%}"
     "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
     "<|im_end|>"},
    {"llama3",
     "{{- bos_token -}}"
     "{%- for message in messages -%}"
     "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' -}}"
     "{%- endfor -%}"
     "{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}{%- endif -%}",
     "<|eot_id|>"},
    {"gemma",
     "{{- bos_token -}}"
     "{%- set sys = namespace(text='') -%}"
     "{%- for message in messages -%}"
     "{%- if message['role'] == 'system' -%}{%- set sys.text = message['content'] + '\\n\\n' -%}"
     "{%- else -%}"
     "{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}"
     "{{- '<start_of_turn>' + role + '\\n' + (sys.text if role == 'user' else '') + message['content'] | trim + '<end_of_turn>\\n' -}}"
     "{%- if role == 'user' -%}{%- set sys.text = '' -%}{%- endif -%}"
     "{%- endif -%}"
     "{%- endfor -%}"
     "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}",
     "<end_of_turn>"},
    {"mistral",
     "{{- bos_token -}}"
     "{%- set sys = namespace(text='') -%}"
     "{%- for message in messages -%}"
     "{%- if message['role'] == 'system' -%}{%- set sys.text = message['content'] + '\\n\\n' -%}"
     "{%- elif message['role'] == 'user' -%}{{- '[INST] ' + sys.text + message['content'] + ' [/INST]' -}}{%- set sys.text = '' -%}"
     "{%- else -%}{{- message['content'] + eos_token -}}"
     "{%- endif -%}"
     "{%- endfor -%}",
     "</s>"},
};

}  // namespace

const builtin_template* find_builtin_template(std::string_view name) {
  for (const auto& t : kTemplates)
    if (name == t.name) return &t;
  return nullptr;
}

std::vector<std::string> builtin_template_names() {
  std::vector<std::string> out;
  for (const auto& t : kTemplates) out.emplace_back(t.name);
  return out;
}

}  // namespace glia
