// Chat templates for models that ship none, or when the user names one (--chat-template NAME).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace glia {

struct builtin_template {
  const char* name;
  const char* source;       // Jinja, rendered like a model's own template
  const char* end_of_turn;  // text that ends an assistant turn (a stop string when not a token)
};

const builtin_template* find_builtin_template(std::string_view name);
std::vector<std::string> builtin_template_names();

}  // namespace glia
