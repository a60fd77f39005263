#include "kl_divergence_run.h"

#include <fmt/core.h>

#include <cstdio>

#include "load_session.h"
#include "model/model_file.h"
#include "model/profile.h"
#include "runtime/kl_divergence.h"

namespace glia::cli {
namespace {

void print_summary(const kl_divergence_report& r) {
  const auto& k = r.kld_sorted;
  const auto& d = r.p_diff_sorted;
  fmt::print("====== Perplexity statistics ======\n");
  fmt::print("Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", r.ppl.value, r.ppl.error);
  fmt::print("Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", r.ppl_base.value, r.ppl_base.error);
  fmt::print("Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", 100.0 * r.log_ppl_correlation);
  fmt::print("Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", r.log_ppl_ratio.value, r.log_ppl_ratio.error);
  fmt::print("Mean PPL(Q)/PPL(base)         : {:10.6f} ± {:10.6f}\n", r.ppl_ratio.value, r.ppl_ratio.error);
  fmt::print("Mean PPL(Q)-PPL(base)         : {:10.6f} ± {:10.6f}\n\n", r.ppl_diff.value, r.ppl_diff.error);
  fmt::print("====== KL divergence statistics ======\n");
  fmt::print("Mean    KLD: {:10.6f} ± {:10.6f}\n", r.kld.value, r.kld.error);
  fmt::print("Maximum KLD: {:10.6f}\n", k.back());
  for (const auto& [name, f] : {std::pair{"99.9%", 0.999f}, {"99.0%", 0.99f}, {"95.0%", 0.95f}, {"90.0%", 0.9f}})
    fmt::print("{}   KLD: {:10.6f}\n", name, percentile(k, f));
  fmt::print("Median  KLD: {:10.6f}\n", percentile(k, 0.5f));
  for (const auto& [name, f] : {std::pair{"10.0%", 0.1f}, {" 5.0%", 0.05f}, {" 1.0%", 0.01f}, {" 0.1%", 0.001f}})
    fmt::print("{}   KLD: {:10.6f}\n", name, percentile(k, f));
  fmt::print("Minimum KLD: {:10.6f}\n\n", k.front());
  fmt::print("====== Token probability statistics ======\n");
  fmt::print("Mean    Δp: {:6.3f} ± {:5.3f} %\n", 100.0 * r.p_diff.value, 100.0 * r.p_diff.error);
  fmt::print("Maximum Δp: {:6.3f}%\n", 100.0 * d.back());
  for (const auto& [name, f] : {std::pair{"99.9%", 0.999f}, {"99.0%", 0.99f}, {"95.0%", 0.95f}, {"90.0%", 0.9f}, {"75.0%", 0.75f}})
    fmt::print("{}   Δp: {:6.3f}%\n", name, 100.0 * percentile(d, f));
  fmt::print("Median  Δp: {:6.3f}%\n", 100.0 * percentile(d, 0.5f));
  for (const auto& [name, f] : {std::pair{"25.0%", 0.25f}, {"10.0%", 0.1f}, {" 5.0%", 0.05f}, {" 1.0%", 0.01f}, {" 0.1%", 0.001f}})
    fmt::print("{}   Δp: {:6.3f}%\n", name, 100.0 * percentile(d, f));
  fmt::print("Minimum Δp: {:6.3f}%\n", 100.0 * d.front());
  fmt::print("RMS Δp    : {:6.3f} ± {:5.3f} %\n", 100.0 * r.p_diff_rms.value, 100.0 * r.p_diff_rms.error);
  fmt::print("Same top p: {:6.3f} ± {:5.3f} %\n", 100.0 * r.same_top.value, 100.0 * r.same_top.error);
}

}  // namespace

int run_kl_divergence(session_options so, const std::string& base_path, bool ctx_given) {
  auto base = logprob_reader::open(base_path);
  if (!base) {
    fmt::print(stderr, "error: {}\n", base.message());
    return 1;
  }
  // The vocabulary first: the context the base's chunks need may not fit a model it does not fit.
  auto md = open_model_metadata(so.model_path);
  if (!md) {
    fmt::print(stderr, "error: {}\n", md.message());
    return 1;
  }
  if (auto p = profile_from_gguf(**md); p) {
    if (status v = check_base_vocabulary(base->header(), p->n_vocab); !v) {
      fmt::print(stderr, "error: {}\n", v.message());
      return 1;
    }
  }
  if (ctx_given && so.n_ctx != base->header().n_ctx)
    fmt::print(stderr, "note: the base's chunks are {} tokens; -c follows them\n", base->header().n_ctx);
  so.n_ctx = base->header().n_ctx;
  auto s = open_session(so);
  if (!s) {
    fmt::print(stderr, "error: {}\n", s.message());
    return 1;
  }
  fmt::print(stderr, "comparing with {}: {} chunks of {} tokens\n", base_path, base->header().n_chunk, base->header().n_ctx);
  auto sums = kl_divergence(**s, *base, so.n_threads, [](int chunk, const kl_divergence_sums& sofar) {
    if (chunk == 0)
      fmt::print("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n");
    const kl_divergence_report r = report(sofar, false);
    fmt::print("{:4d}    {:9.4f} ± {:9.4f}    {:10.5f} ± {:10.5f}    {:10.5f} ± {:10.5f}    {:6.3f} ± {:6.3f} %    {:6.3f} ± {:6.3f} %\n",
               chunk + 1, r.ppl.value, r.ppl.error, r.log_ppl_ratio.value, r.log_ppl_ratio.error, r.kld.value, r.kld.error,
               100.0 * r.p_diff_rms.value, 100.0 * r.p_diff_rms.error, 100.0 * r.same_top.value, 100.0 * r.same_top.error);
    std::fflush(stdout);
  });
  if (!sums) {
    fmt::print(stderr, "error: {}\n", sums.message());
    return 1;
  }
  fmt::print("\n");
  print_summary(report(*sums, true));
  return 0;
}

}  // namespace glia::cli
