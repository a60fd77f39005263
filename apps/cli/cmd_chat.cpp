// glia chat: an interactive conversation with the model's chat template. Each turn re-renders the
// whole conversation and evaluates only the tokens the KV cache does not already hold.
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common_options.h"
#include "draft_options.h"
#include "load_session.h"
#include "sampling_options.h"
#include "core/json_text.h"
#include "server/reasoning_split.h"

namespace glia::cli {
namespace {

std::atomic<bool> g_generating{false};
std::atomic<bool> g_cancel{false};

// Ctrl-C while the model answers stops the answer; at the prompt it quits.
void on_sigint(int) {
  if (g_generating.load()) {
    g_cancel.store(true);
  } else {
    const char msg[] = "\n";
    (void)!::write(STDERR_FILENO, msg, 1);
    ::_exit(130);
  }
}

// Reads one user message: a line, or several when a line ends with '\' or between lines of """.
bool read_message(std::string& out, bool interactive) {
  out.clear();
  std::string line;
  bool block = false;
  while (true) {
    if (interactive) {
      std::fputs(out.empty() ? "> " : ". ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) return !out.empty();
    if (!line.empty() && line.back() == '\r') line.pop_back();  // input saved with Windows line ends
    if (line == "\"\"\"") {
      block = !block;
      if (!block) return true;
      continue;
    }
    if (!block && !line.empty() && line.back() == '\\') {
      line.pop_back();
      out += line + "\n";
      continue;
    }
    out += line;
    if (!block) return true;
    out += "\n";
  }
}

}  // namespace

command_fn add_chat(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "chat with a model using its chat template");
  struct opts {
    session_options s;
    diagnostics_options diag;
    sampling_options sampling;
    draft_options draft;
    std::string chat_template;
    std::string chat_template_kwargs = "{}";
    std::string system;
    int n_predict = -1;
    int reasoning_budget = -1;
    std::string reasoning_budget_message;
    bool verbose = false;
  };
  auto o = std::make_shared<opts>();
  add_session_options(cmd, o->s);
  cmd->add_option("--chat-template", o->chat_template, "built-in template (chatml, llama3, gemma, mistral) or a Jinja file");
  cmd->add_option("--chat-template-kwargs", o->chat_template_kwargs,
                  "JSON object of template variables, e.g. '{\"enable_thinking\": false}' (Qwen3)");
  cmd->add_option("--system", o->system, "system prompt");
  cmd->add_option("-n,--n-predict,--predict", o->n_predict, "most tokens per answer (-1, or llama.cpp's -2: until the model stops)")
      ->check(CLI::Range(-2, 1 << 24))->capture_default_str();
  cmd->add_flag("--verbose", o->verbose, "print the tokens evaluated and reused per turn on stderr");
  add_reasoning_budget_options(cmd, o->reasoning_budget, o->reasoning_budget_message, "per answer");
  o->sampling.add_to(cmd);
  o->draft.add_to(cmd);
  o->diag.add_to(cmd);
  cmd->footer("In the chat: /clear forgets the conversation, /exit quits; end a line with \\ or wrap lines in \"\"\" "
              "for several lines; Ctrl-C stops an answer.");

  return [o]() {
    auto s = open_session(o->s);
    if (!s) {
      fmt::print(stderr, "error: {}\n", s.message());
      return 1;
    }
    session& sess = **s;
    if (!o->diag.start(sess)) return 1;
    auto format = sess.chat_template(o->chat_template);
    if (!format) {
      fmt::print(stderr, "error: {}\n", format.message());
      return 1;
    }
    if (format->fell_back) fmt::print(stderr, "warning: {}\n", format->fallback_note);
    auto kw = nlohmann::json::parse(o->chat_template_kwargs, nullptr, false);
    if (kw.is_discarded() || !kw.is_object()) {
      fmt::print(stderr, "error: --chat-template-kwargs must be a JSON object, such as '{{\"enable_thinking\": false}}'\n");
      return 1;
    }
    // As llama.cpp: templates with a thinking switch (Qwen3, Gemma 4, the R1 distills) think unless told
    // not to, or given no budget to think in.
    if (!kw.contains("enable_thinking")) kw["enable_thinking"] = o->reasoning_budget != 0;
    const std::string template_vars = kw.dump();
    // Without an end-of-generation token an answer ends only at -n: none would fill the context.
    if (o->sampling.ignore_eos() && o->n_predict < 0) {
      fmt::print(stderr, "error: --ignore-eos in a chat needs -n N: an answer would otherwise run until the context is full\n");
      return 1;
    }
    auto sp = o->sampling.resolve(sess);
    if (!sp) {
      fmt::print(stderr, "error: {}\n", sp.message());
      return 1;
    }
    // A budget holds where the template shows how the model reasons and the reasoning is free (a grammar
    // constrains an answer from its first token here).
    const auto tags = server::reasoning_tags_of(format->source);
    std::vector<int32_t> closing;
    if (tags && o->reasoning_budget >= 0 && !sp->grammar) {
      auto t = sess.tokenize(o->reasoning_budget_message + std::string(tags->close), false, true);
      if (!t || t->empty()) {
        fmt::print(stderr, "error: the reasoning budget's closing text cannot be tokenized\n");
        return 1;
      }
      closing = std::move(*t);
    }
    generate_options go;
    go.n_predict = o->n_predict;
    go.cancel = &g_cancel;
    if (!format->end_of_turn.empty()) go.stop.push_back(format->end_of_turn);
    auto draft = o->draft.open(sess, o->s, go);
    if (!draft) {
      fmt::print(stderr, "error: {}\n", draft.message());
      return 1;
    }

    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);

    const bool interactive = ::isatty(STDIN_FILENO);
    nlohmann::json messages = nlohmann::json::array();
    auto start = [&]() {
      messages = nlohmann::json::array();
      if (!o->system.empty()) messages.push_back({{"role", "system"}, {"content", o->system}});
    };
    start();
    int turn = 0;
    // A message the template could not render, or that no longer fits the context, is skipped and
    // the chat goes on; the exit code still says so (a script feeding the chat learns that a
    // message went unanswered).
    bool unanswered = false;
    std::string input;
    while (read_message(input, interactive)) {
      if (input == "/exit" || input == "/quit") break;
      if (input == "/clear") {
        start();
        sess.reset();
        fmt::print(stderr, "(conversation cleared)\n");
        continue;
      }
      if (input == "/help" || input == "/?") {
        fmt::print(stderr, "commands: /clear (forget the conversation), /exit or /quit (end); Ctrl-C stops an answer; other lines are messages\n");
        continue;
      }
      if (input.find_first_not_of(" \t\r") == std::string::npos) continue;  // nothing said
      messages.push_back({{"role", "user"}, {"content", input}});
      auto prompt = sess.render_chat(*format, json_text(messages), true, template_vars);
      if (!prompt) {
        fmt::print(stderr, "error: chat template: {}\n", prompt.message());
        messages.erase(messages.end() - 1);
        unanswered = true;
        continue;
      }
      auto ids = sess.tokenize_chat(*prompt);
      if (!ids) {
        fmt::print(stderr, "error: {}\n", ids.message());
        return 1;
      }
      if (prompt->empty()) {
        fmt::print(stderr, "error: the chat template rendered nothing for this message; it is skipped\n");
        messages.erase(messages.end() - 1);
        unanswered = true;
        continue;
      }
      if (int64_t(ids->size()) >= sess.n_ctx()) {
        fmt::print(stderr, "context full: the conversation needs {} tokens and the context holds {}; /clear to start over or use a larger -c\n",
                   ids->size(), sess.n_ctx());
        messages.erase(messages.end() - 1);
        unanswered = true;
        continue;
      }
      sampler_params turn_params = *sp;
      if (!closing.empty())
        turn_params.reasoning = reasoning_limit{std::string(tags->open), std::string(tags->close), server::prompt_opens_reasoning(*prompt, *tags), "",
                                                o->reasoning_budget, closing};
      sampler smp(turn_params, [&sess](int32_t id) { return sess.token_text(id); }, sp->grammar ? sess.grammar_vocab() : nullptr);
      std::string answer;
      generation_stats st;
      g_cancel = false;
      g_generating = true;
      status r = sess.generate(*ids, go, smp, [&answer](std::string_view text) {
        answer += text;
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return !std::ferror(stdout);  // a failed write ends the chat (main reports it)
      }, &st);
      g_generating = false;
      std::fputs("\n", stdout);
      std::fflush(stdout);
      ++turn;
      if (o->verbose) {
        const std::string d = draft_options::summary(go, st);
        fmt::print(stderr, "[turn {}: {} prompt tokens, {} reused, {} evaluated, {} generated{}]\n", turn, st.n_prompt,
                   st.n_reused, st.n_prompt - st.n_reused, st.n_generated, d.empty() ? "" : "; " + d);
      }
      if (!r) {
        fmt::print(stderr, "error: {}\n", r.message());
        return 1;
      }
      if (std::ferror(stdout)) break;
      if (st.reason == stop_reason::cancelled) fmt::print(stderr, "(stopped)\n");
      if (st.reason == stop_reason::grammar_dead_end)
        fmt::print(stderr, "warning: no token could continue the answer in the grammar: it is incomplete\n");
      if (st.reason == stop_reason::context_full)
        fmt::print(stderr, "context full: the answer was cut at {} tokens; /clear to start over or use a larger -c\n", sess.n_ctx());
      messages.push_back({{"role", "assistant"}, {"content", answer}});
    }
    return o->diag.finish(sess) && !unanswered ? 0 : 1;
  };
}

}  // namespace glia::cli
