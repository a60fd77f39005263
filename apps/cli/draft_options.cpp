#include "draft_options.h"

#include <fmt/core.h>

#include "load_session.h"

namespace glia::cli {

void draft_options::add_to(CLI::App* cmd) {
  cmd->add_option("--model-draft", model,
                  "draft model for speculative decoding: a smaller model with the same vocabulary proposes tokens that "
                  "this one checks in one pass (the text is the same as without it)")
      ->check(CLI::ExistingPath);
  cmd->add_option("--draft-max,--draft,--draft-n", n_max, "most tokens the draft model proposes at a time (0: no speculative decoding)")
      ->check(CLI::Range(0, 256))->capture_default_str();
  cmd->add_option("--draft-min", n_min, "fewest proposed tokens worth checking (a shorter proposal is dropped)")
      ->check(CLI::Range(0, 256))->capture_default_str();
  cmd->add_option("--draft-p-min", p_min, "the draft stops proposing where its top token's probability is below this")
      ->check(CLI::Range(0.0f, 1.0f))->capture_default_str();
}

result<std::unique_ptr<session>> draft_options::open(const session& target, const session_options& target_opts,
                                                     generate_options& go) const {
  if (model.empty()) return std::unique_ptr<session>();
  if (n_max == 0) {  // as llama.cpp's --draft-max 0: the draft model is not even loaded
    fmt::print(stderr, "note: --draft-max 0: no speculative decoding\n");
    return std::unique_ptr<session>();
  }
  if (!(p_min >= 0.0f && p_min <= 1.0f)) return make_error("--draft-p-min {} is not a probability", p_min);
  if (n_min > n_max) return make_error("--draft-min {} is more than --draft-max {}", n_min, n_max);
  if (n_min > target_opts.n_ubatch - 1)
    fmt::print(stderr, "warning: a prompt chunk (-b/-ub) of {} leaves room for {} drafts at a time, fewer than --draft-min {}: no speculative decoding\n",
               target_opts.n_ubatch, target_opts.n_ubatch - 1, n_min);
  // A pass of the sampled token and its drafts fits one ubatch (see session::generate).
  if (target_opts.n_ubatch - 1 < n_max)
    fmt::print(stderr, "warning: a prompt chunk (-b/-ub) of {} limits drafts to {} token{} at a time\n", target_opts.n_ubatch, target_opts.n_ubatch - 1,
               target_opts.n_ubatch == 2 ? "" : "s");
  session_options o = target_opts;
  o.model_path = model;
  o.n_ctx = target.n_ctx();  // it follows the target's context token for token
  auto d = open_session(o);
  if (!d) return make_error("draft model: {}", d.message());
  if (status s = target.check_draft(**d); !s) return make_error("draft model {}: {}", model, s.message());
  go.draft = d->get();
  go.n_draft = n_max;
  go.n_draft_min = n_min;
  go.draft_p_min = p_min;
  return d;
}

std::string draft_options::summary(const generate_options& go, const generation_stats& st) {
  if (!go.draft) return {};
  return fmt::format("draft: {} proposed, {} accepted ({:.0f}%)", st.n_drafted, st.n_accepted,
                     st.n_drafted > 0 ? 100.0 * st.n_accepted / st.n_drafted : 0.0);
}

}  // namespace glia::cli
