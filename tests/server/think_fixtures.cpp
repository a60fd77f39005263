#include "think_fixtures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "gguf/gguf.h"
#include "server_process.h"
#include "test_support.h"

namespace glia::test {
std::string opening_think_template() {
  return write_scratch("think_template.jinja",
                       "{%- if tools %}tools: {{ tools | tojson }}\n{% endif %}"
                       "{%- for m in messages %}{{ m.role }}: {{ m.content.split('</think>')[-1] }}\n{% endfor %}"
                       "{%- if add_generation_prompt %}assistant: <think>\n{% endif %}");
}

std::string plain_think_template() {
  return write_scratch("plain_think_template.jinja",
                       "{#- the model reasons between <think> and </think> #}"
                       "{%- for m in messages %}{{ m.role }}: {{ m.content.split('</think>')[-1] }}\n{% endfor %}"
                       "{%- if add_generation_prompt %}assistant:{% endif %}");
}

std::string brown_with_think_tokens() { return brown_with_control_tokens("brown_think.gguf", {{think_id, "<think>"}, {unthink_id, "</think>"}}); }

std::string brown_with_control_tokens(const std::string& name, const std::vector<std::pair<int32_t, std::string>>& renamed) {
  const std::string path = scratch(name);
  auto f = gguf::file::open(test_model());
  EXPECT_TRUE(f) << f.message();
  std::vector<std::string> tokens;
  for (const auto& v : *(*f)->find("tokenizer.ggml.tokens")->as_array()) tokens.push_back(*v.as_string());
  std::vector<int32_t> types;
  for (const auto& v : *(*f)->find("tokenizer.ggml.token_type")->as_array()) types.push_back(int32_t(*v.as_int()));
  for (const auto& [id, text] : renamed) {
    tokens.at(size_t(id)) = text;
    types.at(size_t(id)) = 3;  // control
  }
  gguf::writer w;
  w.copy_metadata(**f);
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  EXPECT_TRUE(w.copy_tensors(**f));
  // Written aside and renamed: tests in other processes may be loading the file this moment.
  const std::string part = path + "." + std::to_string(::getpid());
  EXPECT_TRUE(w.write(part));
  std::filesystem::rename(part, path);
  return path;
}

}  // namespace glia::test
