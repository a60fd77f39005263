// glia run: continue a prompt. Only the generated text goes to stdout; statistics go to stderr.
#include <fmt/core.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>

#include "commands.h"
#include "common_options.h"
#include "draft_options.h"
#include "escapes.h"
#include "load_session.h"
#include "sampling_options.h"

namespace glia::cli {

command_fn add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "complete a prompt");
  struct opts {
    session_options s;
    diagnostics_options diag;
    std::string prompt;
    std::vector<std::string> stop;
    std::string prompt_file;
    int n_predict = 128;
    bool parse_special = true;
    bool escape = true;
    sampling_options sampling;
    draft_options draft;
  };
  auto o = std::make_shared<opts>();
  add_session_options(cmd, o->s);
  auto* prompt = cmd->add_option("-p,--prompt", o->prompt, "prompt text");
  auto* file = cmd->add_option("-f,--file", o->prompt_file, "read the prompt from FILE (exact bytes)")->check(CLI::ExistingFile);
  prompt->excludes(file);
  cmd->callback([prompt, file]() {
    if (prompt->count() == 0 && file->count() == 0) throw CLI::RequiredError("-p or -f");
  });
  cmd->add_option("--stop,-r,--reverse-prompt", o->stop,
                  "stop generating at this text (never printed; matched in the printed text, which control tokens are not "
                  "part of); repeatable")->take_all()->check(non_empty_text);
  cmd->add_option("-n,--n-predict,--predict", o->n_predict,
                  "tokens to generate (-1, or llama.cpp's -2: until the model ends its text or the context is full)")
      ->check(CLI::Range(-2, 1 << 24))->capture_default_str();
  cmd->add_flag("-e,--escape,!--no-escape", o->escape,
                "read \\n, \\r, \\t, \\', \\\", \\\\ and \\xHH in -p and --stop as the characters they name (the default, as in "
                "llama.cpp; -f is read as it is)");
  cmd->add_flag("!--no-parse-special", o->parse_special,
                "read special-token text in the prompt (\"<|eot_id|>\") as plain text; by default it is the token, as in llama-cli");
  o->sampling.add_to(cmd);
  o->draft.add_to(cmd);
  o->diag.add_to(cmd);

  return [o]() {
    auto s = open_session(o->s);
    if (!s) {
      fmt::print(stderr, "error: {}\n", s.message());
      return 1;
    }
    auto& sess = **s;
    if (!o->diag.start(sess)) return 1;
    std::string prompt_text = o->escape ? process_escapes(o->prompt) : o->prompt;
    std::vector<std::string> stops = o->stop;
    if (o->escape)
      for (auto& stop : stops) stop = process_escapes(stop);
    if (!o->prompt_file.empty()) {
      std::ifstream in(o->prompt_file, std::ios::binary);
      prompt_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    auto ids = sess.tokenize(prompt_text, true, o->parse_special);
    if (!ids) {
      fmt::print(stderr, "error: {}\n", ids.message());
      return 1;
    }
    auto sp = o->sampling.resolve(sess);
    if (!sp) {
      fmt::print(stderr, "error: {}\n", sp.message());
      return 1;
    }
    sampler smp(*sp, [&sess](int32_t id) { return sess.token_text(id); }, sp->grammar ? sess.grammar_vocab() : nullptr);
    generation_stats st;
    generate_options go;
    go.n_predict = o->n_predict;
    go.stop = std::move(stops);
    auto draft = o->draft.open(sess, o->s, go);
    if (!draft) {
      fmt::print(stderr, "error: {}\n", draft.message());
      return 1;
    }
    // A failed write (full disk, a closed pipe when SIGPIPE is ignored) stops generating: main
    // reports it once the command returns.
    status r = sess.generate(*ids, go, smp, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return !std::ferror(stdout);
    }, &st);
    std::fputc('\n', stdout);
    std::fflush(stdout);  // before the statistics on stderr, when both go to one file
    if (!r) {
      fmt::print(stderr, "error: {}\n", r.message());
      return 1;
    }
    if (!o->diag.finish(sess)) return 1;
    if (st.reason == stop_reason::context_full)
      fmt::print(stderr, "context full: stopped after {} generated tokens, the context holds {} (a larger -c allows more)\n",
                 st.n_generated, sess.n_ctx());
    if (st.reason == stop_reason::grammar_dead_end)
      fmt::print(stderr, "warning: no token could continue the text in the grammar (all it allows are banned, or none spells "
                         "what it needs): the output is incomplete\n");
    fmt::print(stderr, "prompt: {} tokens in {:.3f} s ({:.1f} t/s); generated: {} tokens in {:.3f} s ({:.1f} t/s)\n",
               st.n_prompt, st.prompt_seconds, st.prompt_seconds > 0 ? st.n_prompt / st.prompt_seconds : 0.0,
               st.n_generated, st.decode_seconds, st.decode_seconds > 0 ? st.n_generated / st.decode_seconds : 0.0);
    if (const std::string d = draft_options::summary(go, st); !d.empty()) fmt::print(stderr, "{}\n", d);
    return 0;
  };
}

}  // namespace glia::cli
