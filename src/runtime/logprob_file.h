// llama-perplexity's file of a base model's log-probabilities (--kl-divergence-base), byte for byte,
// so a base computed by llama.cpp (say, of an F16 model glia has no room for) can judge glia's
// quantization, and the other way round. Layout (little-endian): "_logits_", u32 n_ctx, i32 n_vocab,
// i32 n_chunk, i32 tokens[n_chunk * n_ctx] (the text's tokens, before BOS replaces each chunk's
// first), then for each chunk one record per scored position (n_ctx / 2 .. n_ctx - 2): f32 scale,
// f32 min_log_prob, then n_vocab u16 (padded to an even count): log p(i) ~ scale * q[i] +
// min_log_prob over the 16 nats below the top token, q = 0 below that.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/output_file.h"

namespace glia {

// u16 words of one record.
inline size_t logprob_record_words(int64_t n_vocab) { return size_t(2 * ((n_vocab + 1) / 2) + 4); }

// One row of logits as a record (`out` holds logprob_record_words). Returns -log p(token).
double encode_logprobs(std::span<const float> logits, int32_t token, uint16_t* out);
// The records of one chunk's scored rows ([n, n_vocab] logits; row k scores next_tokens[k]), the
// rows shared among the pool's threads (each is a pass over the vocabulary).
void encode_logprob_rows(std::span<const float> rows, std::span<const int32_t> next_tokens, int64_t n_vocab, thread_pool& pool,
                         std::vector<uint16_t>& records);
// log p(i) as a record stores it.
inline float decoded_logprob(const uint16_t* record, int64_t i) {
  float scale, min_log_prob;
  std::memcpy(&scale, record, 4);
  std::memcpy(&min_log_prob, record + 2, 4);
  return scale * float(record[4 + i]) + min_log_prob;
}

struct logprob_header {
  int n_ctx = 0, n_vocab = 0, n_chunk = 0;
  std::vector<int32_t> tokens;  // n_chunk * n_ctx
};

// Written under a temporary name and put in place by finish(): a run that fails leaves what was
// there (a base that took hours to compute is not truncated by a mistyped rerun).
class logprob_writer {
 public:
  static result<logprob_writer> create(const std::string& path, const logprob_header& h);
  status write(std::span<const uint16_t> records);  // the records of one chunk
  status finish();

 private:
  explicit logprob_writer(output_file out) : out_(std::move(out)) {}
  output_file out_;
};

class logprob_reader {
 public:
  // Checks the header against the file's size (every chunk's records must be there) before
  // anything is allocated: n_vocab up to 2^24, n_ctx * n_chunk up to 2^31 - 1 (llama.cpp's int).
  static result<logprob_reader> open(const std::string& path);
  const logprob_header& header() const { return h_; }
  status read_chunk(std::vector<uint16_t>& records);  // the next chunk's records

 private:
  std::string path_;
  logprob_header h_;
  std::unique_ptr<FILE, int (*)(FILE*)> f_{nullptr, &std::fclose};
};

}  // namespace glia
