// glia's public API for the user-facing paths (run, chat, serve): load a model, tokenize, evaluate,
// generate. No backend or model internals appear here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sampler/sampler.h"

namespace glia {

struct session_options {
  std::string model_path;
  int n_ctx = 0;            // 0: the model's training context, capped at 4096
  int n_threads = 0;        // 0: one per core
  std::string kv_type = "f16";    // f16 | f32
  std::string backend = "cpu";    // cpu | ref
  bool use_mmap = true;
  int n_ubatch = 512;       // tokens per forward chunk during prefill
};

struct generation_stats {
  int n_prompt = 0;
  int n_generated = 0;
  double prompt_seconds = 0.0;
  double decode_seconds = 0.0;
  bool stopped_by_eog = false;
};

class session {
 public:
  static result<std::unique_ptr<session>> create(const session_options& opts);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  int n_vocab() const;
  int n_ctx() const;
  int32_t n_past() const;  // tokens already in the KV cache
  std::string architecture() const;

  // Text -> token ids with the model's tokenizer. add_special adds BOS/EOS per the model's flags.
  result<std::vector<int32_t>> tokenize(std::string_view text, bool add_special, bool parse_special = false) const;
  std::string detokenize(std::span<const int32_t> ids) const;
  bool is_end_of_generation(int32_t id) const;

  // Appends tokens to the context and evaluates them; `logits` receives [n, n_vocab] when
  // all_logits, else the last token's [n_vocab].
  status eval(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& logits);
  // Forgets the context.
  void reset();

  // Per-op profiling of every following forward call (--profile): a table for people, JSON, and a
  // Chrome trace.
  void enable_profiling();
  std::string profile_table() const;
  std::string profile_json() const;
  std::string profile_trace() const;

  // Captures the intermediates whose names match `pattern` (e.g. "blk.*.attn_norm,logits") for the
  // first n_positions positions; finish_tensor_dump writes them to `dir` and returns statistics.
  void enable_tensor_dump(const std::string& pattern, const std::string& dir, int n_positions);
  result<std::string> finish_tensor_dump();

  // Evaluates the prompt, then samples up to n_predict tokens, calling on_text with each complete
  // piece of UTF-8 text (return false to stop). Stops at an end-of-generation token.
  status generate(std::span<const int32_t> prompt, int n_predict, sampler& smp,
                  const std::function<bool(std::string_view text)>& on_text, generation_stats* stats = nullptr);

 private:
  struct impl;
  explicit session(std::unique_ptr<impl> p);
  std::unique_ptr<impl> p_;
};

}  // namespace glia
