#include "server/infill_prompt.h"

#include <algorithm>

namespace glia::server {
namespace {

std::vector<int32_t> tokens_of(const session& s, const std::string& text) {
  auto t = s.tokenize(text, false, false);  // the user's text: special-token text is text
  return t ? std::move(*t) : std::vector<int32_t>();
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& from) { to.insert(to.end(), from.begin(), from.end()); }

}  // namespace

api_result<std::vector<int32_t>> infill_prompt(const session& s, const infill_input& in, int n_batch, int n_predict) {
  const session::fim_tokens fim = s.fim();
  if (fim.prefix < 0 || fim.suffix < 0 || fim.middle < 0)
    return bad_request("the model has no fill-in-the-middle tokens (a code model such as Qwen2.5-Coder or StarCoder has them)");
  std::vector<int32_t> extra;
  if (fim.repository >= 0) {
    extra.push_back(fim.repository);
    append(extra, tokens_of(s, "myproject\n"));
  }
  for (const infill_input::file& e : in.extra) {
    if (fim.file_separator >= 0) {
      extra.push_back(fim.file_separator);
      append(extra, tokens_of(s, (e.filename.empty() ? std::string("tmp") : e.filename) + "\n"));
    } else {
      append(extra, tokens_of(s, "\n\n--- snippet ---\n\n"));
    }
    append(extra, tokens_of(s, e.text));
  }
  if (fim.file_separator >= 0) {
    extra.push_back(fim.file_separator);
    append(extra, tokens_of(s, "filename\n"));
  }
  std::vector<int32_t> prefix = tokens_of(s, in.prefix), suffix = tokens_of(s, in.suffix);
  // The text after the cursor on its line (llama.vscode's): special-token text is the token, as
  // llama-server reads a prompt.
  auto middle = s.tokenize(in.middle, false, true);
  if (!middle) return bad_request(middle.message(), "prompt");
  const size_t prefix_take = std::min(prefix.size(), size_t(3 * (n_batch / 4)));
  const size_t suffix_take = std::min(suffix.size(), size_t(std::max<int64_t>(0, int64_t(n_batch / 4) - int64_t(2 + middle->size()))));
  // What the context leaves after a chunk, the tokens to generate twice over, the three markers, BOS
  // and one generated token (llama-server reserves the first two only, and can overfill the context).
  const int64_t room = int64_t(s.n_ctx()) - n_batch - 2 * int64_t(std::max(n_predict, 0)) - 5;
  const size_t extra_take = std::min(extra.size(), size_t(std::max<int64_t>(0, room)));

  // [extra][BOS][PRE]prefix prompt[SUF]suffix[MID], as llama-server's format_infill lays it out (the
  // prompt after the prefix, the extra files before BOS).
  std::vector<int32_t> out(extra.end() - std::ptrdiff_t(extra_take), extra.end());
  if (const auto bos = s.added_bos()) out.push_back(*bos);
  out.push_back(fim.prefix);
  out.insert(out.end(), prefix.end() - std::ptrdiff_t(prefix_take), prefix.end());
  append(out, *middle);
  out.push_back(fim.suffix);
  out.insert(out.end(), suffix.begin(), suffix.begin() + std::ptrdiff_t(suffix_take));
  out.push_back(fim.middle);
  return out;
}

}  // namespace glia::server
