// glia perplexity: a model's perplexity on a text file, as llama-perplexity computes it (same
// chunking, same scored half, same printed lines), so figures from the two tools compare directly.
#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>

#include "commands.h"
#include "common_options.h"
#include "core/read_file.h"
#include "interrupts.h"
#include "kl_divergence_run.h"
#include "load_session.h"
#include "runtime/logprob_file.h"
#include "runtime/perplexity.h"

namespace glia::cli {

command_fn add_perplexity(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "perplexity of a model on a text file (as llama-perplexity computes it)");
  struct opts {
    session_options s;
    std::string file;
    int n_chunks = -1;
    std::string kld_base;
    bool kld = false;
  };
  auto o = std::make_shared<opts>();
  add_session_options(cmd, o->s);
  o->s.n_ctx = 512;
  auto* ctx_option = cmd->get_option("--ctx-size");
  ctx_option->description("tokens per chunk; the second half of each is scored (0: the model's context, at most 4096)")
      ->capture_default_str();
  auto* file = cmd->add_option("-f,--file", o->file, "the text (e.g. wiki.test.raw); one trailing newline is dropped, as llama.cpp's -f does")
                   ->check(CLI::ExistingFile);
  cmd->add_option("--chunks", o->n_chunks, "score at most this many chunks (-1: all)")
      ->check(CLI::Range(-1, 1 << 30))->capture_default_str();
  cmd->add_option("--kl-divergence-base", o->kld_base,
                  "FILE of the model's log-probabilities to write (llama-perplexity's format), or with --kl-divergence to "
                  "compare with");
  auto* kld = cmd->add_flag("--kl-divergence", o->kld,
                            "compare with the base log-probabilities of --kl-divergence-base (their text and chunks; no -f)");
  file->excludes(kld);

  return [o, ctx_option]() {
    if (o->kld) {
      if (o->kld_base.empty()) {
        fmt::print(stderr, "error: --kl-divergence needs --kl-divergence-base FILE\n");
        return 1;
      }
      // As llama-perplexity, comparing scores every chunk of the base (--chunks shaped it when written).
      if (o->n_chunks >= 0) fmt::print(stderr, "note: --chunks applies when the base is written; all of its chunks are compared\n");
      return run_kl_divergence(o->s, o->kld_base, ctx_option->count() > 0);
    }
    if (o->file.empty()) {
      fmt::print(stderr, "error: -f FILE is required (the text to score)\n");
      return 1;
    }
    // 0 takes the context the session opens with (llama-perplexity: the training context).
    if (o->s.n_ctx != 0 && o->s.n_ctx < 4) {
      fmt::print(stderr, "error: -c {}: a chunk needs at least 4 tokens\n", o->s.n_ctx);
      return 1;
    }
    auto text = read_whole_file(o->file);
    if (!text) {
      fmt::print(stderr, "error: {}\n", text.message());
      return 1;
    }
    auto s = open_session(o->s);
    if (!s) {
      fmt::print(stderr, "error: {}\n", s.message());
      return 1;
    }
    session& sess = **s;
    const auto t0 = std::chrono::steady_clock::now();
    auto ids = perplexity_tokens(sess, *text);
    if (!ids) {
      fmt::print(stderr, "error: {}\n", ids.message());
      return 1;
    }
    fmt::print(stderr, "tokenized {} bytes into {} tokens in {:.2f} s\n", text->size(), ids->size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    perplexity_options po;
    po.n_ctx = sess.n_ctx();
    po.n_chunks = o->n_chunks;
    po.n_threads = o->s.n_threads;
    // The base log-probabilities for a later --kl-divergence: the chunks' tokens up front, then
    // each chunk's records as it is scored.
    std::optional<logprob_writer> base;
    std::vector<uint16_t> records;
    // Writing a base (often tens of GB for a real vocabulary), Ctrl-C stops after the chunk being
    // scored, so that the partial file is removed (a second one ends the process at once).
    const std::atomic<bool>* interrupted = o->kld_base.empty() ? nullptr : stop_on_interrupt();
    if (!o->kld_base.empty()) {
      const int n_chunks = perplexity_chunk_count(ids->size(), po);
      logprob_header h{po.n_ctx, sess.n_vocab(), n_chunks,
                       std::vector<int32_t>(ids->begin(), ids->begin() + std::ptrdiff_t(n_chunks) * po.n_ctx)};
      auto w = logprob_writer::create(o->kld_base, h);
      if (!w) {
        fmt::print(stderr, "error: {}\n", w.message());
        return 1;
      }
      base.emplace(std::move(*w));
      po.on_rows = [&base, &records, nv = sess.n_vocab()](std::span<const float> rows, std::span<const int32_t> chunk,
                                                         thread_pool& pool) -> status {
        const size_t first = chunk.size() / 2;
        encode_logprob_rows(rows, chunk.subspan(first + 1), nv, pool, records);
        return base->write(records);
      };
    }
    const auto t1 = std::chrono::steady_clock::now();
    bool printed = false;
    auto r = perplexity(sess, *ids, po, [&printed, interrupted](int chunk, double ppl) {
      fmt::print("[{}]{:.4f},", chunk + 1, ppl);
      std::fflush(stdout);
      printed = true;
      return !(interrupted && interrupted->load());
    });
    if (printed) std::fputc('\n', stdout);
    std::fflush(stdout);  // the running line before anything on stderr
    if (interrupted && interrupted->load()) {
      fmt::print(stderr, "interrupted before the base {} was complete\n", o->kld_base);
      return 130;
    }
    if (!r) {
      fmt::print(stderr, "error: {}\n", r.message());
      return 1;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    if (base) {
      if (status f = base->finish(); !f) {
        fmt::print(stderr, "error: {}\n", f.message());
        return 1;
      }
      fmt::print(stderr, "wrote the log-probabilities of {} chunks to {}\n", r->n_chunks, o->kld_base);
    }
    fmt::print("Final estimate: PPL = {:.4f} +/- {:.5f}\n", r->ppl, r->ppl_error);
    std::fflush(stdout);
    fmt::print(stderr, "{} chunks of {} tokens, {} tokens scored, in {:.2f} s ({:.1f} tokens/s evaluated and scored)\n",
               r->n_chunks, po.n_ctx, r->n_scored, seconds, seconds > 0 ? double(r->n_chunks) * po.n_ctx / seconds : 0.0);
    return 0;
  };
}

}  // namespace glia::cli
