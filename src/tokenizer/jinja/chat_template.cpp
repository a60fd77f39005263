#include "tokenizer/jinja/chat_template.h"

#include <algorithm>
#include <filesystem>

#include "core/json_depth.h"
#include "core/read_file.h"
#include "gguf/gguf.h"
#include "gguf/hf_keys.h"
#include "core/status.h"

namespace glia::jinja {

result<json> chat_variables(const chat_inputs& in) {
  if (!in.messages.is_array()) return make_error("chat messages must be a JSON array, got {}", in.messages.type_name());
  if (!in.tools.is_null() && !in.tools.is_array()) return make_error("chat tools must be a JSON array or null, got {}", in.tools.type_name());
  if (!in.extra.is_object()) return make_error("extra template variables must be a JSON object");
  json vars = json::object();
  vars["messages"] = in.messages;
  vars["tools"] = in.tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = in.add_generation_prompt;
  // transformers passes tokenizer.special_tokens_map, which holds only the tokens that are set: a
  // null bos_token (Qwen's tokenizer_config) leaves `bos_token` undefined, so "{{ bos_token }}"
  // renders nothing rather than "None".
  for (const auto& [name, text] : in.tokens)
    if (text) vars[name] = *text;
  for (const auto& [k, v] : in.extra.items()) vars[k] = v;
  return vars;
}

result<std::string> render_chat(const compiled_template& t, const chat_inputs& in) {
  GLIA_ASSIGN(json vars, chat_variables(in));
  // Some real templates rescan the earlier messages for each one (Gemma 4's: ~4 n^2 steps), so the
  // step budget, the caller's included, gets an allowance that grows with the square of the
  // conversation, up to 4000 messages (~130M steps, a few seconds); for anything worse than
  // quadratic the budget still holds. (std::max: the sum cannot wrap past a budget near 2^64.)
  render_options opts = in.options;
  const uint64_t n = std::min<uint64_t>(in.messages.size(), 4000);
  opts.limits.max_steps = std::max(opts.limits.max_steps, opts.limits.max_steps + 8 * n * n);
  return t.render(vars, opts);
}

result<std::string> render_chat(std::string_view template_source, const chat_inputs& in) {
  GLIA_ASSIGN(compiled_template t, compiled_template::compile(template_source, in.options.limits));
  return render_chat(t, in);
}

const std::string* chat_template_set::select(std::string_view name, bool has_tools) const {
  auto named_template = [&](std::string_view n) -> const std::string* {
    for (const auto& [k, v] : named)
      if (k == n) return &v;
    return nullptr;
  };
  if (name.empty() && has_tools)
    if (const std::string* t = named_template("tool_use")) return t;
  if (name.empty() || name == "default") return default_template.empty() ? named_template("default") : &default_template;
  return named_template(name);
}

result<chat_template_set> load_chat_templates(const gguf::file& f) {
  // A translated Hugging Face checkpoint (model/hf/) carries tokenizer_config.json as it is.
  const bool from_checkpoint = f.find(gguf::key_hf_tokenizer_json) || f.find(gguf::key_hf_tokenizer_config) ||
                               f.find(gguf::key_hf_chat_template) || f.find(gguf::key_hf_chat_template_json);
  // A GGUF quantized from a checkpoint also has tokenizer.chat_template, derived from these for llama.cpp.
  if (from_checkpoint && gguf::hf_tokenizer_rules(f)) {
    hf_template_texts texts;
    texts.config = f.get_string(gguf::key_hf_tokenizer_config).value_or("{}");
    texts.jinja = f.get_string(gguf::key_hf_chat_template);
    texts.json = f.get_string(gguf::key_hf_chat_template_json);
    const std::string named_prefix = std::string(gguf::key_hf_chat_template) + ".";
    for (const auto& [k, v] : f.metadata())
      if (k.starts_with(named_prefix) && v.as_string()) texts.named.emplace_back(k.substr(named_prefix.size()), *v.as_string());
    return load_chat_templates_hf_texts(texts);
  }
  chat_template_set set;
  constexpr std::string_view key = "tokenizer.chat_template";
  for (const auto& [k, v] : f.metadata()) {
    if (k != key && !k.starts_with(std::string(key) + ".")) continue;
    const std::string* text = v.as_string();
    if (!text) return make_error("{}: expected a string, found {}", k, gguf::value_type_name(v.type));
    if (k == key) set.default_template = *text;
    else set.named.emplace_back(k.substr(key.size() + 1), *text);
  }
  const gguf::value* tokens = f.find("tokenizer.ggml.tokens");
  const std::vector<gguf::value>* arr = tokens ? tokens->as_array() : nullptr;
  // The vocabulary loader's rules (vocab_gguf.cpp): -1 and 0xFFFFFFFF mean "no such token" (llama.cpp
  // writes them), and a padding id outside the vocabulary is ignored rather than refused.
  static constexpr struct {
    std::string_view name, key;
    bool strict;
  } ids[] = {{"bos_token", "tokenizer.ggml.bos_token_id", true},
             {"eos_token", "tokenizer.ggml.eos_token_id", true},
             {"unk_token", "tokenizer.ggml.unknown_token_id", true},
             {"pad_token", "tokenizer.ggml.padding_token_id", false}};
  for (const auto& [name, id_key, strict] : ids) {
    const auto id = f.get_int(id_key);
    if (!id || *id == -1 || *id == 0xFFFFFFFFll) continue;
    if (!arr || *id < 0 || uint64_t(*id) >= arr->size()) {
      if (!strict) continue;
      return make_error("{} = {} is outside the vocabulary ({} tokens)", id_key, *id, arr ? arr->size() : 0);
    }
    const std::string* text = (*arr)[size_t(*id)].as_string();
    if (!text) return make_error("tokenizer.ggml.tokens[{}]: not a string", *id);
    set.tokens.emplace_back(std::string(name), *text);
  }
  return set;
}

result<chat_template_set> load_chat_templates_gguf(const std::string& path) {
  GLIA_ASSIGN(auto f, gguf::file::open(path));
  return load_chat_templates(*f);
}


result<chat_template_set> load_chat_templates_hf_texts(const hf_template_texts& texts) {
  const std::string& config_text = texts.config;
  // Real configs nest a few levels; deeper text is refused before parsing (see core/json_depth.h).
  if (json_nesting_depth(config_text) > max_config_json_depth) return make_error("tokenizer_config.json: nested too deeply");
  const json config = json::parse(config_text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return make_error("tokenizer_config.json: not a JSON object");
  chat_template_set set;
  if (auto it = config.find("chat_template"); it != config.end()) {
    if (it->is_string()) {
      set.default_template = it->get<std::string>();
    } else if (it->is_array()) {
      for (const auto& t : *it) {
        if (!t.is_object() || !t.contains("name") || !t.contains("template") || !t["name"].is_string() ||
            !t["template"].is_string())
          return make_error("tokenizer_config.json: chat_template entries must be {{\"name\": ..., \"template\": ...}}");
        const std::string name = t["name"].get<std::string>();
        if (name == "default") set.default_template = t["template"].get<std::string>();
        else set.named.emplace_back(name, t["template"].get<std::string>());
      }
    } else if (!it->is_null()) {
      return make_error("tokenizer_config.json: chat_template must be a string or a list");
    }
  }
  // Newer transformers save the template next to the config.
  if (texts.jinja) {
    set.default_template = *texts.jinja;
  } else if (texts.json) {
    if (json_nesting_depth(*texts.json) > max_config_json_depth) return make_error("chat_template.json: nested too deeply");
    const json j = json::parse(*texts.json, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("chat_template") || !j["chat_template"].is_string())
      return make_error("chat_template.json: expected an object with a \"chat_template\" string");
    set.default_template = j["chat_template"].get<std::string>();
  }
  for (const auto& [name, text] : texts.named) {
    std::erase_if(set.named, [&](const auto& t) { return t.first == name; });
    set.named.emplace_back(name, text);
  }
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    std::optional<std::string> token;
    if (auto it = config.find(name); it != config.end()) {
      if (it->is_string()) token = it->get<std::string>();
      else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        token = (*it)["content"].get<std::string>();
      else if (!it->is_null())
        return make_error("tokenizer_config.json: {} must be a string, an object with \"content\", or null", name);
    }
    set.tokens.emplace_back(name, std::move(token));
  }
  return set;
}

result<chat_template_set> load_chat_templates_hf(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  hf_template_texts texts;
  const fs::path d(dir);
  if (!fs::is_directory(d, ec)) return make_error("{}: not a folder", dir);
  auto optional_text = [&](const fs::path& p, std::optional<std::string>& out) -> status {
    if (!fs::exists(p, ec)) return {};
    GLIA_ASSIGN(out, read_whole_file(p.string()));
    return {};
  };
  std::optional<std::string> config;
  GLIA_TRY(optional_text(d / "tokenizer_config.json", config));
  GLIA_TRY(optional_text(d / "chat_template.jinja", texts.jinja));
  GLIA_TRY(optional_text(d / "chat_template.json", texts.json));
  if (!config && !texts.jinja && !texts.json) return make_error("{}: no tokenizer_config.json or chat template", dir);
  if (config) texts.config = std::move(*config);
  for (const auto& p : files_with_extension(d / "additional_chat_templates", ".jinja")) {
    GLIA_ASSIGN(std::string text, read_whole_file(p.string()));
    texts.named.emplace_back(p.stem().string(), std::move(text));
  }
  auto set = load_chat_templates_hf_texts(texts);
  if (!set) return make_error("{}: {}", dir, set.message());
  return set;
}

bool shows_system_role(const compiled_template& t, const special_tokens& tokens) {
  constexpr std::string_view probe = "glia system probe 7f3a";
  chat_inputs in;
  in.tokens = tokens;
  in.messages = json::array({{{"role", "user"}, {"content", "hello"}}});
  // A template that fails without a system message too (a tool_use template that needs tools) is
  // asked again with a tool; one that fails either way says nothing about system messages.
  if (!render_chat(t, in)) {
    in.tools = json::parse(
        R"([{"type": "function", "function": {"name": "probe", "description": "probe", "parameters": {"type": "object", "properties": {}}}}])");
    if (!render_chat(t, in)) return true;
  }
  in.messages = json::array({{{"role", "system"}, {"content", probe}}, {{"role", "user"}, {"content", "hello"}}});
  auto shown = render_chat(t, in);
  return shown && shown->find(probe) != std::string::npos;
}

json system_text_to_user(json messages) {
  json out = json::array();
  std::string pending;
  for (auto& m : messages) {
    const bool text = m.is_object() && m.contains("content") && m["content"].is_string();
    if (text && m.value("role", "") == "system") {
      pending += (pending.empty() ? "" : "\n\n") + m["content"].get<std::string>();
      continue;
    }
    if (!pending.empty()) {
      if (text && m.value("role", "") == "user") m["content"] = pending + "\n\n" + m["content"].get<std::string>();
      else out.push_back({{"role", "user"}, {"content", pending}});  // where it stood, before an assistant's turn
      pending.clear();
    }
    out.push_back(std::move(m));
  }
  if (!pending.empty()) out.push_back({{"role", "user"}, {"content", pending}});
  return out;
}

bool requires_alternating_roles(const compiled_template& t, const special_tokens& tokens) {
  chat_inputs in;
  in.tokens = tokens;
  in.messages = json::array({{{"role", "user"}, {"content", "one"}}, {{"role", "assistant"}, {"content", "two"}}, {{"role", "user"}, {"content", "three"}}});
  if (!render_chat(t, in)) return false;  // fails for some other reason: nothing to learn
  in.messages = json::array({{{"role", "user"}, {"content", "one"}}, {{"role", "user"}, {"content", "two"}}});
  return !render_chat(t, in);
}

json join_consecutive_turns(json messages) {
  json out = json::array();
  const auto joinable = [](const json& m) {
    return m.is_object() && m.contains("content") && m["content"].is_string() && !m.contains("tool_calls") &&
           (m.value("role", "") == "user" || m.value("role", "") == "assistant" || m.value("role", "") == "system");
  };
  for (auto& m : messages) {
    if (!out.empty() && joinable(m) && joinable(out.back()) && out.back()["role"] == m["role"]) {
      out.back()["content"] = out.back()["content"].get<std::string>() + "\n\n" + m["content"].get<std::string>();
      continue;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace glia::jinja
