#include "runtime/logprob_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/softmax_norm.h"

namespace glia {

double encode_logprobs(std::span<const float> logits, int32_t token, uint16_t* out) {
  const softmax_norm norm = softmax_normalizer(logits);
  const float top = norm.top;
  // 16 nats below the top in 65535 steps
  const float low = std::max(*std::min_element(logits.begin(), logits.end()), top - 16.0f);
  const float log_sum = float(norm.log_sum);
  const float min_log_prob = low - top - log_sum;
  const float scale = (top - low) / 65535.0f;
  std::memcpy(out, &scale, 4);
  std::memcpy(out + 2, &min_log_prob, 4);
  uint16_t* q = out + 4;
  const size_t n = logits.size();
  std::fill(q, q + (logprob_record_words(int64_t(n)) - 4), uint16_t(0));
  if (scale > 0.0f) {
    const float inv = 1.0f / scale;
    for (size_t i = 0; i < n; ++i)
      if (logits[i] > low) q[i] = uint16_t(std::nearbyint(inv * (logits[i] - low)));  // ties to even, as llama.cpp
  }
  return double(top) + double(log_sum) - double(logits[size_t(token)]);
}

void encode_logprob_rows(std::span<const float> rows, std::span<const int32_t> next_tokens, int64_t n_vocab, thread_pool& pool,
                         std::vector<uint16_t>& records) {
  const size_t words = logprob_record_words(n_vocab);
  records.resize(next_tokens.size() * words);
  pool.parallel_for(next_tokens.size(), [&](size_t k) {
    encode_logprobs(rows.subspan(k * size_t(n_vocab), size_t(n_vocab)), next_tokens[k], records.data() + k * words);
  });
}

result<logprob_writer> logprob_writer::create(const std::string& path, const logprob_header& h) {
  if (h.tokens.size() != size_t(h.n_ctx) * size_t(h.n_chunk))
    return make_error("{}: {} tokens for {} chunks of {}", path, h.tokens.size(), h.n_chunk, h.n_ctx);
  GLIA_ASSIGN(output_file out, output_file::open(path));
  logprob_writer w(std::move(out));
  const uint32_t n_ctx = uint32_t(h.n_ctx);
  const int32_t n_vocab = h.n_vocab, n_chunk = h.n_chunk;
  std::FILE* f = w.out_.stream();
  bool ok = std::fwrite("_logits_", 1, 8, f) == 8;
  ok = ok && std::fwrite(&n_ctx, 4, 1, f) == 1 && std::fwrite(&n_vocab, 4, 1, f) == 1 && std::fwrite(&n_chunk, 4, 1, f) == 1;
  ok = ok && std::fwrite(h.tokens.data(), 4, h.tokens.size(), f) == h.tokens.size();
  if (!ok) return make_error("{}: cannot write: {}", path, std::strerror(errno));
  return w;
}

status logprob_writer::write(std::span<const uint16_t> records) {
  if (std::fwrite(records.data(), 2, records.size(), out_.stream()) != records.size())
    return make_error("{}: cannot write: {}", out_.path(), std::strerror(errno));
  return {};
}

status logprob_writer::finish() { return out_.commit(); }

result<logprob_reader> logprob_reader::open(const std::string& path) {
  logprob_reader r;
  r.path_ = path;
  if (std::error_code dir_ec; std::filesystem::is_directory(path, dir_ec)) return make_error("{}: is a folder, not a file of log-probabilities", path);
  r.f_.reset(std::fopen(path.c_str(), "rb"));
  if (!r.f_) return make_error("{}: cannot open: {}", path, std::strerror(errno));
  char magic[8];
  uint32_t n_ctx = 0;
  int32_t n_vocab = 0, n_chunk = 0;
  if (std::fread(magic, 1, 8, r.f_.get()) != 8 || std::memcmp(magic, "_logits_", 8) != 0)
    return make_error("{}: not a file of log-probabilities (llama-perplexity's --kl-divergence-base)", path);
  if (std::fread(&n_ctx, 4, 1, r.f_.get()) != 1 || std::fread(&n_vocab, 4, 1, r.f_.get()) != 1 ||
      std::fread(&n_chunk, 4, 1, r.f_.get()) != 1)
    return make_error("{}: the header ends early", path);
  if (n_ctx < 4 || n_ctx > (1u << 24) || n_vocab < 1 || n_vocab > (1 << 24) || n_chunk < 1 ||
      uint64_t(n_ctx) * uint64_t(n_chunk) > uint64_t(INT32_MAX))
    return make_error("{}: header says n_ctx {}, n_vocab {}, n_chunk {}", path, n_ctx, n_vocab, n_chunk);
  // Every chunk's tokens and records must be in the file before anything is read for them; the
  // product of the header's fields is taken in 128 bits (it can pass 2^64).
  const unsigned __int128 scored = n_ctx - 1 - n_ctx / 2;
  const unsigned __int128 want128 = 20 + 4 * (unsigned __int128)(n_ctx) * n_chunk +
                                    2 * scored * logprob_record_words(n_vocab) * (unsigned __int128)(n_chunk);
  if (want128 > (unsigned __int128)(UINT64_MAX)) return make_error("{}: its header describes more than 2^64 bytes", path);
  const uint64_t want = uint64_t(want128);
  std::error_code ec;
  const uint64_t have = std::filesystem::file_size(path, ec);
  if (ec || have != want)
    return make_error("{}: {} bytes, but its header (n_ctx {}, n_vocab {}, {} chunks) needs {}", path, ec ? 0 : have, n_ctx,
                      n_vocab, n_chunk, want);
  r.h_.n_ctx = int(n_ctx);
  r.h_.n_vocab = n_vocab;
  r.h_.n_chunk = n_chunk;
  r.h_.tokens.resize(size_t(n_ctx) * size_t(n_chunk));
  if (std::fread(r.h_.tokens.data(), 4, r.h_.tokens.size(), r.f_.get()) != r.h_.tokens.size())
    return make_error("{}: the tokens end early", path);
  for (int32_t t : r.h_.tokens)
    if (t < 0 || t >= n_vocab) return make_error("{}: token {} outside its vocabulary of {}", path, t, n_vocab);
  return r;
}

status logprob_reader::read_chunk(std::vector<uint16_t>& records) {
  records.resize(size_t(h_.n_ctx - 1 - h_.n_ctx / 2) * logprob_record_words(h_.n_vocab));
  if (std::fread(records.data(), 2, records.size(), f_.get()) != records.size()) return make_error("{}: the records end early", path_);
  return {};
}

}  // namespace glia
