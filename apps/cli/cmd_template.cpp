// glia template: renders a model's chat template (or a given one) for a conversation, printing the
// prompt exactly as the model would see it. An inspection tool, so it uses the module API.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include "commands.h"
#include "core/json_error.h"
#include "model/model_file.h"
#include "runtime/builtin_templates.h"
#include "tokenizer/jinja/chat_template.h"

namespace glia::cli {
namespace {

result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open {}", path);
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

result<jinja::json> read_json(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.take_error();
  try {
    return jinja::json::parse(*text);
  } catch (const jinja::json::exception& e) {
    return make_error("{}: not valid JSON: {}", path, json_error_reason(e.what()));
  }
}

// "2024-07-26" or "2024-07-26T12:00:00".
std::optional<jinja::civil_time> parse_date(const std::string& s) {
  static const std::regex re(R"((\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return std::nullopt;
  jinja::civil_time t;
  t.year = std::stoi(m[1]);
  t.month = std::stoi(m[2]);
  t.day = std::stoi(m[3]);
  if (m[4].matched) t.hour = std::stoi(m[4]), t.minute = std::stoi(m[5]);
  if (m[6].matched) t.second = std::stoi(m[6]);
  // A day past the month's end would roll into the next month (2024-02-30 as 1 Mar).
  static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (t.year % 4 == 0 && t.year % 100 != 0) || t.year % 400 == 0;
  if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > days[t.month - 1] + (t.month == 2 && leap) || t.hour > 23 ||
      t.minute > 59 || t.second > 59)
    return std::nullopt;
  return t;
}

struct options {
  std::string model, tokenizer, template_file, template_name, messages, tools, date;
  std::vector<std::string> vars;
  bool add_generation_prompt = false;
};

int fail(const std::string& msg) {
  fmt::print(stderr, "error: {}\n", msg);
  return 1;
}

int run(const options& o) {
  if (o.model.empty() == o.tokenizer.empty()) return fail("give exactly one of -m/--model and --tokenizer");
  auto set = [&]() -> result<jinja::chat_template_set> {
    if (o.model.empty()) return jinja::load_chat_templates_hf(tokenizer_folder(o.tokenizer));
    auto f = open_model_metadata(o.model);
    if (!f) return f.take_error();
    return jinja::load_chat_templates(**f);
  }();
  if (!set) return fail(set.message());

  jinja::chat_inputs in;
  auto conv = read_json(o.messages);
  if (!conv) return fail(conv.message());
  // A bare list of messages, or {"messages": [...], "tools": [...]} as in the test pack.
  if (conv->is_object()) {
    if (!conv->contains("messages")) return fail(o.messages + ": expected a list of messages or an object with \"messages\"");
    in.messages = (*conv)["messages"];
    if (conv->contains("tools")) in.tools = (*conv)["tools"];
  } else {
    in.messages = *conv;
  }
  if (!o.tools.empty()) {
    auto tools = read_json(o.tools);
    if (!tools) return fail(tools.message());
    in.tools = *tools;
  }
  for (const std::string& kv : o.vars) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return fail("--var expects NAME=VALUE, got '" + kv + "'");
    jinja::json v = jinja::json::parse(kv.substr(eq + 1), nullptr, false);
    in.extra[kv.substr(0, eq)] = v.is_discarded() ? jinja::json(kv.substr(eq + 1)) : v;
  }
  in.add_generation_prompt = o.add_generation_prompt;
  in.tokens = set->tokens;
  if (!o.date.empty()) {
    auto d = parse_date(o.date);
    if (!d) return fail("--date expects YYYY-MM-DD (optionally THH:MM[:SS]), got '" + o.date + "'");
    in.options.now = *d;
  }

  std::string source;
  if (const builtin_template* b = o.template_file.empty() || std::filesystem::exists(o.template_file) ? nullptr : find_builtin_template(o.template_file)) {
    source = b->source;
  } else if (!o.template_file.empty()) {
    auto t = read_file(o.template_file);
    if (!t) return fail(t.message());
    source = std::move(*t);
  } else {
    const std::string* t = set->select(o.template_name, in.tools.is_array() && !in.tools.empty());
    if (!t) {
      if (!o.template_name.empty()) return fail("the model has no chat template named '" + o.template_name + "'");
      return fail("the model has no chat template (give one with --template)");
    }
    source = *t;
  }
  auto out = jinja::render_chat(source, in);
  if (!out) return fail(out.message());
  std::fwrite(out->data(), 1, out->size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

command_fn add_template(CLI::App& app) {
  auto* cmd = app.add_subcommand("template", "render a chat template for a conversation");
  auto o = std::make_shared<options>();
  auto* model = cmd->add_option("-m,--model", o->model, "GGUF model (or Hugging Face checkpoint folder) whose chat template and special tokens to use")
                    ->check(CLI::ExistingPath);
  cmd->add_option("--tokenizer", o->tokenizer, "Hugging Face tokenizer folder (tokenizer_config.json)")
      ->check(CLI::ExistingDirectory)
      ->excludes(model);
  cmd->add_option("--template", o->template_file, "render this template file (or a built-in one: " + fmt::format("{}", fmt::join(builtin_template_names(), ", ")) + ") instead of the model's")
      ->check([](const std::string& v) -> std::string {
        if (std::filesystem::exists(v) || find_builtin_template(v)) return {};
        return fmt::format("'{}' is neither a file nor a built-in template ({})", v, fmt::join(builtin_template_names(), ", "));
      })
      ->type_name("FILE|NAME");
  cmd->add_option("--template-name", o->template_name, "a named template of the model (e.g. tool_use)");
  cmd->add_option("--messages", o->messages, "JSON file: a list of messages, or {\"messages\": [...], \"tools\": [...]}")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--tools", o->tools, "JSON file: a list of tool definitions")->check(CLI::ExistingFile);
  cmd->add_flag("--add-generation-prompt", o->add_generation_prompt, "end with the assistant turn's header");
  cmd->add_option("--date", o->date, "the date strftime_now sees, YYYY-MM-DD (default: today)");
  cmd->add_option("--var", o->vars, "extra template variable NAME=JSON (e.g. enable_thinking=false); repeatable")->take_all();
  return [o]() { return run(*o); };
}

}  // namespace glia::cli
