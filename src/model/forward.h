// The one decoder forward pass for every family: embed -> layers (attention block, FFN block) ->
// final norm -> LM head. It processes a batch of tokens (prefill, causal) or a single token (decode)
// with the same code, in chunks of at most n_ubatch tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace glia {

// Called with every named intermediate ("attn_norm", "q", "attn_out", "ffn_out", "l_out", "logits"...)
// as [n_rows, n_cols] floats for the positions of the current chunk; layer is -1 outside layers.
// The single entry point for tensor dumps and debugging: nothing else in the forward is debug code.
using tensor_tap = std::function<void(const char* name, int layer, const float* data, int64_t n_rows,
                                      int64_t n_cols, std::span<const int32_t> positions)>;

// Called around every op with its name (for the profiler): begin = true before, false after.
using op_hook = std::function<void(const char* op, bool begin)>;

// One sequence's part of a batched forward call: its KV cache, its new tokens and their first position.
struct sequence_batch {
  kv_cache* cache = nullptr;
  std::span<const int32_t> tokens;
  int32_t pos0 = 0;
  bool all_logits = false;  // every token's logits, not only the last's
};

class forward_pass {
 public:
  // Hands every weight matrix to the backend to prepare (backend::prepare_weight) before the first
  // token, so the load, not the first request, pays for repacking.
  forward_pass(const model& m, backend& b);
  ~forward_pass();
  forward_pass(const forward_pass&) = delete;
  forward_pass& operator=(const forward_pass&) = delete;

  // What preparing the weights cost: bytes the backend holds for them and the time it took.
  size_t prepared_bytes() const { return prepared_bytes_; }
  double prepare_seconds() const { return prepare_seconds_; }

  // One-token steps so far, and how many of them ran as a replayed recording (one submission).
  uint64_t one_token_steps() const { return one_token_steps_; }
  uint64_t replayed_steps() const { return replayed_steps_; }

  void set_tap(tensor_tap tap) { tap_ = std::move(tap); }
  void set_op_hook(op_hook hook) { hook_ = std::move(hook); }

  // Evaluates `tokens` at positions pos0, pos0+1, ... appending their keys and values to `cache`.
  // Writes logits [n_tokens, n_vocab] when all_logits, else only the last token's [n_vocab].
  // Errors: token id outside the vocabulary, positions past the context, non-finite activations
  // (naming the layer and position where they first appeared).
  status run(kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0, bool all_logits,
             std::vector<float>& logits);
  // The same evaluation, writing every token's final hidden state (after the final norm, what the
  // LM head would multiply) [n_tokens, n_embd] instead of logits: for embeddings.
  status run_hidden(kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0, std::vector<float>& hidden);

  // Evaluates several sequences in one pass over the weights: the rows of all segments are
  // concatenated for every matmul, norm and FFN; RoPE uses each row's own position; the KV store and
  // attention run per segment against that segment's cache. Writes the logits of each segment's
  // last token, or of all its tokens where it asks (all_logits), segment after segment. Each segment
  // holds at most its cache's n_ubatch tokens. With batch-invariant kernels a segment's logits do not
  // depend on the other segments.
  status run_batch(std::span<const sequence_batch> segs, std::vector<float>& logits);

 private:
  // Rows [row0, row0 + n) of the current chunk belong to the sequence kept in `cache`.
  struct segment_rows {
    kv_cache* cache;
    int64_t row0, n;
  };
  // Activations live in the backend's memory (device memory on a GPU), sized for rows_cap rows.
  struct scratch {
    backend_buffer x, h, q, k, v, attn, o, gate, up, logits;
    backend_buffer tokens_dev, pos_dev, nonfinite;  // nonfinite: a record per layer
    int64_t rows_cap = 0;
    std::vector<int32_t> pos, tokens;
    std::vector<segment_rows> segs;
    std::vector<int64_t> out_rows;  // rows whose logits are wanted
    bool hidden_out = false;        // their final-norm rows instead of logits (run_hidden)
  };
  // A one-token step of one cache, recorded by the backend to be replayed as one submission.
  struct recorded_step {
    bool ran_once = false;  // the first step runs op by op (it sizes the backend's own buffers)
    int failures = 0;       // recordings that failed; after two the steps just run op by op
    int id = -1;
  };
  status validate(const kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0) const;
  // run() and run_hidden(): rows of width n_vocab (logits) or n_embd (hidden) per output token.
  status run_rows(kv_cache& cache, std::span<const int32_t> tokens, int32_t pos0, bool all_rows, bool hidden,
                  std::vector<float>& out);
  // Evaluates s_.tokens / s_.pos / s_.segs; writes the logits of s_.out_rows to logits_out.
  status run_chunk(float* logits_out);
  // Issues the ops of one chunk (tokens and positions already in the backend's memory).
  void issue_chunk(float* logits);
  // Replays (or records, then replays) the step when it qualifies; false when the ops must be issued.
  bool replay_step(float* logits);
  void ensure_scratch(int64_t n_rows);
  void drop_recordings();
  void attention_block(int il, int64_t n);
  void ffn_block(int il, int64_t n);
  void prefetch_after_layer(int il);
  status check_records(int64_t n) const;
  void tap(const char* name, int layer, const float* data, int64_t n_rows, int64_t n_cols) const;
  float* buf(const backend_buffer& b) const { return b.as<float>(); }

  const model& m_;
  backend& b_;
  tensor_tap tap_;
  op_hook hook_;
  scratch s_;
  std::map<std::pair<uint64_t, int64_t>, recorded_step> recorded_;  // by (cache id, logit rows)
  size_t prepared_bytes_ = 0;
  double prepare_seconds_ = 0.0;
  uint64_t one_token_steps_ = 0, replayed_steps_ = 0;
};

}  // namespace glia
