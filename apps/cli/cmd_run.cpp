// glia run: continue a prompt. Only the generated text goes to stdout; statistics go to stderr.
#include <fmt/core.h>

#include <cstdio>
#include <random>

#include "commands.h"
#include "common_options.h"

namespace glia::cli {

command_fn add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "complete a prompt");
  struct opts {
    session_options s;
    diagnostics_options diag;
    std::string prompt;
    int n_predict = 128;
    sampler_params sp;
    bool seed_given = false;
    int64_t seed = -1;
  };
  auto o = std::make_shared<opts>();
  add_session_options(cmd, o->s);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->check(CLI::Range(0, 1 << 24))->capture_default_str();
  cmd->add_option("--temp", o->sp.temperature, "temperature (0 = greedy)")->check(CLI::Range(0.0, 100.0))->capture_default_str();
  cmd->add_option("--top-k", o->sp.top_k, "top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", o->sp.top_p, "top-p (1 = off)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--min-p", o->sp.min_p, "min-p (0 = off)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("-s,--seed", o->seed, "random seed (default: random, printed on stderr)");
  o->diag.add_to(cmd);

  return [o]() {
    auto s = session::create(o->s);
    if (!s) {
      fmt::print(stderr, "error: {}\n", s.message());
      return 1;
    }
    auto& sess = **s;
    o->diag.start(sess);
    auto ids = sess.tokenize(o->prompt, true, false);
    if (!ids) {
      fmt::print(stderr, "error: {}\n", ids.message());
      return 1;
    }
    sampler_params sp = o->sp;
    if (o->seed >= 0) {
      sp.seed = uint64_t(o->seed);
    } else {
      sp.seed = std::random_device{}();
      if (sp.temperature > 0) fmt::print(stderr, "seed: {}\n", sp.seed);
    }
    sampler smp(sp);
    generation_stats st;
    status r = sess.generate(*ids, o->n_predict, smp, [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    }, &st);
    std::fputc('\n', stdout);
    if (!r) {
      fmt::print(stderr, "error: {}\n", r.message());
      return 1;
    }
    if (!o->diag.finish(sess)) return 1;
    fmt::print(stderr, "prompt: {} tokens in {:.3f} s ({:.1f} t/s); generated: {} tokens in {:.3f} s ({:.1f} t/s)\n",
               st.n_prompt, st.prompt_seconds, st.prompt_seconds > 0 ? st.n_prompt / st.prompt_seconds : 0.0,
               st.n_generated, st.decode_seconds, st.decode_seconds > 0 ? st.n_generated / st.decode_seconds : 0.0);
    return 0;
  };
}

}  // namespace glia::cli
