// glia logits: evaluate token ids and write their logits as little-endian float32 [n_ids, n_vocab].
#include <fmt/core.h>

#include <bit>
#include <cstdio>
#include <cerrno>
#include <cstring>

#include "commands.h"
#include "common_options.h"
#include "load_session.h"
#include "token_ids.h"

namespace glia::cli {

command_fn add_logits(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits", "evaluate token ids and write their logits (float32 [n_ids, n_vocab])");
  struct opts {
    session_options s;
    diagnostics_options diag;
    std::string ids;
    std::string out;
    bool one_by_one = false;
  };
  auto o = std::make_shared<opts>();
  add_session_options(cmd, o->s);
  cmd->add_option("--ids", o->ids, "token ids (1,2,3 or \"1 2 3\" or [1, 2, 3]), or @FILE holding them")->required();
  cmd->add_option("--out", o->out, "output file (-: stdout)")->required();
  cmd->add_flag("--one-by-one", o->one_by_one, "evaluate one token at a time through the KV cache");
  o->diag.add_to(cmd);

  return [o]() {
    auto ids = read_token_ids(o->ids);
    if (!ids) {
      fmt::print(stderr, "error: {}\n", ids.message());
      return 1;
    }
    auto s = open_session(o->s);
    if (!s) {
      fmt::print(stderr, "error: {}\n", s.message());
      return 1;
    }
    auto& sess = **s;
    if (!o->diag.start(sess)) return 1;
    for (size_t i = 0; i < ids->size(); ++i)
      if ((*ids)[i] < 0 || (*ids)[i] >= sess.n_vocab()) {
        fmt::print(stderr, "error: token id {} (index {}) is outside the vocabulary (0..{})\n", (*ids)[i], i, sess.n_vocab() - 1);
        return 1;
      }
    if (int64_t(ids->size()) > sess.n_ctx()) {
      fmt::print(stderr, "error: {} ids do not fit the context of {} tokens (use -c)\n", ids->size(), sess.n_ctx());
      return 1;
    }
    std::vector<float> all, row;
    if (o->one_by_one) {
      for (int32_t id : *ids) {
        const int32_t one[1] = {id};
        status r = sess.eval(one, false, row);
        if (!r) {
          fmt::print(stderr, "error: {}\n", r.message());
          return 1;
        }
        all.insert(all.end(), row.begin(), row.end());
      }
    } else {
      status r = sess.eval(*ids, true, all);
      if (!r) {
        fmt::print(stderr, "error: {}\n", r.message());
        return 1;
      }
    }
    // x86-64 and AArch64 Linux are little-endian, which is what the file format promises.
    static_assert(std::endian::native == std::endian::little);
    const bool to_stdout = o->out == "-";
    std::FILE* out = to_stdout ? stdout : std::fopen(o->out.c_str(), "wb");
    const size_t bytes = all.size() * sizeof(float);
    const bool written = out && std::fwrite(all.data(), 1, bytes, out) == bytes && std::fflush(out) == 0;
    const int err = errno;
    if (out && !to_stdout) std::fclose(out);
    if (!written) {
      fmt::print(stderr, "error: cannot write {}: {}\n", to_stdout ? "stdout" : o->out, std::strerror(err));
      return 1;
    }
    if (!o->diag.finish(sess)) return 1;
    fmt::print(stderr, "wrote {} x {} logits to {}\n", ids->size(), sess.n_vocab(), o->out);
    return 0;
  };
}

}  // namespace glia::cli
