// glia's public API for the user-facing paths (run, chat, serve): load a model, tokenize, evaluate,
// generate. No backend or model internals appear here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sampler/sampler.h"

namespace glia {

namespace jinja {
class compiled_template;
}

struct session_options {
  std::string model_path;
  int n_ctx = 0;            // 0: the model's training context, capped at 4096
  int n_threads = 0;        // 0: one per core
  std::string kv_type = "f16";    // f16 | f32
  std::string backend = "auto";   // auto (cuda when a CUDA device is present, else cpu) | cpu | cuda | ref
  std::string cpu_isa = "best";   // cap on the CPU kernels' instruction set: best | avx512vnni | avx2 | scalar
  bool use_mmap = true;
  bool repack_weights = true;  // let the backend repack weights at load into its kernels' layout
  int n_ubatch = 512;       // tokens per forward chunk during prefill
  int n_sequences = 1;      // independent sequences, each with a KV cache of n_ctx (the server's slots)
  bool check_tensors = false;  // scan every weight for NaN/Inf (quant scales included) before use
  std::function<void(double fraction)> load_progress;  // reading the file (--no-mmap)
};

// grammar_dead_end: no token could continue a constrained text that was not yet complete.
enum class stop_reason { length, end_of_generation, stop_string, cancelled, context_full, callback, grammar_dead_end };

class session;

struct generate_options {
  int n_predict = 128;                         // most tokens to generate (< 0: until the context is full)
  std::vector<std::string> stop;               // stop strings: generation ends there, and they are never printed
  const std::atomic<bool>* cancel = nullptr;   // when it becomes true, generation stops after the current token
  // Speculative decoding: a smaller model with the same vocabulary (check_draft) proposes up to
  // n_draft tokens greedily, and this model checks them in one forward pass. Every token is still
  // sampled from this model's logits, in order, with the same sampler calls, so the text is the same
  // as without a draft (the logits of a pass of up to 32 tokens are those of one token at a time, on
  // every backend); only the speed differs. Proposing stops where the draft's top probability (of
  // its full softmax) falls below draft_p_min; a proposal of fewer than n_draft_min tokens is not
  // checked (llama.cpp's --draft-min); a draft that proposed nothing rests a few steps.
  // generate() moves the draft session's context along.
  session* draft = nullptr;
  int n_draft = 16;
  int n_draft_min = 0;
  float draft_p_min = 0.75f;
};

struct generation_stats {
  int n_prompt = 0;      // prompt tokens
  int n_reused = 0;      // of which were already in the KV cache
  int n_generated = 0;
  int n_drafted = 0;     // tokens the draft model proposed (and this model checked)
  int n_accepted = 0;    // of which this model sampled the same
  double prompt_seconds = 0.0;
  double decode_seconds = 0.0;
  stop_reason reason = stop_reason::length;
};

// Generated token ids -> text, piece by piece, as generate() prints it: bytes of an incomplete UTF-8
// character are held back until it completes. For front ends that drive generation token by token
// (the server). Valid while its session lives.
class text_stream {
 public:
  ~text_stream();
  text_stream(const text_stream&) = delete;
  text_stream& operator=(const text_stream&) = delete;
  std::string push(int32_t id);
  // The end of the stream: held-back bytes of an incomplete character come out as U+FFFD.
  std::string flush();

 private:
  friend class session;
  struct impl;
  explicit text_stream(std::unique_ptr<impl> p);
  std::unique_ptr<impl> p_;
};

class session {
 public:
  static result<std::unique_ptr<session>> create(const session_options& opts);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  int n_vocab() const;
  int n_ctx() const;
  int n_ctx_train() const;  // the context the model was trained with (its GGUF context_length)
  // A warning for front ends to print when the context is longer than the training context (allowed,
  // as in llama.cpp: text past it may degrade), or empty.
  std::string context_warning() const;
  int32_t n_past() const;  // tokens already in the KV cache
  const std::vector<int32_t>& history() const;  // those tokens
  std::string architecture() const;
  uint64_t model_file_bytes() const;
  bool model_is_mapped() const;
  // Weights the backend repacked at load for its kernels (bytes it holds) and the time that took.
  uint64_t prepared_weight_bytes() const;
  double prepare_seconds() const;
  // A numeric metadata value of the model file (e.g. "general.sampling.temp"), if present.
  std::optional<double> metadata_number(std::string_view key) const;
  // A string metadata value (e.g. "tokenizer.chat_template"), if present.
  std::optional<std::string> metadata_string(std::string_view key) const;
  // The text of a token as the vocabulary stores it (for DRY sequence breakers, templates).
  std::string token_text(int32_t id) const;

  // Text -> token ids with the model's tokenizer. add_special adds BOS/EOS per the model's flags.
  result<std::vector<int32_t>> tokenize(std::string_view text, bool add_special, bool parse_special = false) const;
  // A rendered chat template: its special-token text is the tokens, and it starts with BOS once when
  // the vocabulary adds one, whether the template wrote it (Llama 3's, Gemma's) or not (ChatML,
  // Zephyr's), as llama.cpp tokenizes a chat.
  result<std::vector<int32_t>> tokenize_chat(std::string_view rendered) const;
  // special: control tokens such as <s> as their text (else left out).
  std::string detokenize(std::span<const int32_t> ids, bool special = false) const;
  bool is_end_of_generation(int32_t id) const;
  // Sets a -inf logit bias on every end-of-generation token (EOS, EOT, ...), as llama.cpp's
  // --ignore-eos does: generation then ends only by length, a stop string or a full context.
  void forbid_end_of_generation(sampler_params& p) const;
  // The vocabulary as a grammar-constrained sampler needs it (each token's text, the end tokens),
  // built once on first use; pass it to sampler's constructor when sampler_params::grammar is set.
  std::shared_ptr<const grammar::token_vocab> grammar_vocab() const;
  // The BOS token when the vocabulary puts one in front of a text (tokenize's add_special).
  std::optional<int32_t> added_bos() const;
  // The vocabulary's BOS and EOS tokens (-1: none).
  int32_t bos_token() const;
  int32_t eos_token() const;
  // A code model's fill-in-the-middle markers (-1 where the vocabulary has none).
  struct fim_tokens {
    int32_t prefix = -1, suffix = -1, middle = -1, repository = -1, file_separator = -1;
  };
  fim_tokens fim() const;
  // raw: the pieces as they are, without a Hugging Face tokenizer's clean-up (for a generation with a
  // grammar, which checked exactly those pieces). shown_control: texts of control tokens to print
  // anyway (markers a reply is read by, which some models write as control tokens: [TOOL_CALLS],
  // <|python_tag|>, Gemma 4's <|channel>); other control tokens stay out of the text.
  std::unique_ptr<text_stream> make_text_stream(bool raw = false, const std::vector<std::string>& shown_control = {}) const;

  // Appends tokens to the context and evaluates them; `logits` receives [n, n_vocab] when
  // all_logits, else the last token's [n_vocab].
  status eval(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& logits);
  // Forgets the context.
  void reset();

  // Chat templates. `spec` empty: the model's own template (ChatML when it has none; `fell_back`
  // says so). Otherwise the name of a built-in (chatml, llama3, gemma, mistral) or a file path.
  struct chat_format {
    std::string source;        // Jinja
    std::shared_ptr<const jinja::compiled_template> compiled;  // source, parsed once by chat_template()
    std::string end_of_turn;   // a stop string for built-ins whose marker is not a special token
    bool fell_back = false;
    std::string fallback_note;  // when fell_back: why ChatML is used, for a warning
    // Whether the template shows a system message (Gemma 1/2's and Mistral v0.1's raise on one):
    // render_chat then gives its text to the first user message instead, as llama.cpp does.
    bool system_role = true;
    // Whether it refuses two user messages in a row: render_chat then joins consecutive turns.
    bool alternating_roles = false;
  };
  // with_tools: for a conversation with tools, the model's "tool_use" template when it has one (as
  // Hugging Face chooses; Hermes 2 Pro ships one), else the same as without.
  result<chat_format> chat_template(const std::string& spec, bool with_tools = false) const;
  // Renders messages (a JSON array of {"role", "content"} objects, as text) with a template, giving it
  // the model's special tokens.
  result<std::string> render_chat(const chat_format& fmt, const std::string& messages_json, bool add_generation_prompt,
                                  const std::string& extra_vars_json = "{}") const;

  // Several sequences sharing this session's weights, for a server's slots. Sequence 0 is the
  // session's own context (eval, generate, history); set_sequence_count adds KV caches 1..n-1 (or
  // drops them). Each sequence has its own history.
  status set_sequence_count(int n);
  int sequence_count() const;
  const std::vector<int32_t>& sequence_history(int seq) const;
  // Keeps only the first n tokens of sequence `seq`. Returns false when a sliding-window cache had
  // already overwritten keys they need: the sequence is then cleared.
  bool sequence_keep(int seq, int n);
  struct batch_item {
    int seq = 0;
    std::span<const int32_t> tokens;  // appended to that sequence (at most the batch size -b)
    bool all_logits = false;          // every token's logits (scoring a prompt), not only the last's
  };
  // Evaluates every item in ONE forward pass (one pass over the weights for all of them) and appends
  // the tokens to their sequences; `logits` receives rows of n_vocab, item after item: each item's
  // last token, or all its tokens with all_logits. An item's logits do not depend on the other items
  // (batch-invariant kernels). Each sequence may appear at most once.
  status eval_batch(std::span<const batch_item> items, std::vector<float>& logits);

  // An embedding of a text's tokens: the final hidden states (after the final norm) pooled over the
  // tokens (mean, the first token's, or the last token's, as embedding models built on decoders use
  // it: Qwen3-Embedding pools the last), then scaled to unit length when `normalize`. Evaluated in a
  // cache of its own, so no sequence's context changes. The pooling a model file asks for is
  // embedding_pooling() ({arch}.pooling_type: 1 mean, 2 cls, 3 last; last when absent or none).
  enum class pooling { mean, first, last };
  pooling embedding_pooling() const;
  // "mean", "cls" (the first token's) or "last", as llama.cpp's --pooling names them; nullopt else.
  static std::optional<pooling> pooling_named(std::string_view name);
  result<std::vector<float>> embed(std::span<const int32_t> tokens, pooling how, bool normalize);
  int n_embd() const;

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

  // Makes the context hold exactly `tokens` and returns the last token's logits, evaluating only
  // what is not already cached (the longest common prefix with history() is reused). A prompt
  // longer than the context is an error that names both numbers.
  status eval_reusing(std::span<const int32_t> tokens, std::vector<float>& logits, int* n_reused = nullptr);

  // Evaluates `prompt` (reusing the cached prefix), then samples tokens, calling on_text with each
  // complete piece of UTF-8 text (return false to stop). Stops at an end-of-generation token, a stop
  // string, n_predict tokens, cancellation or a full context (see generation_stats::reason).
  status generate(std::span<const int32_t> prompt, const generate_options& opts, sampler& smp,
                  const std::function<bool(std::string_view text)>& on_text, generation_stats* stats = nullptr);

  // Whether `draft` can propose tokens for this model: its token ids must mean the same text (a
  // vocabulary of at most 128 more or fewer entries, as llama.cpp allows, and the same pieces for
  // the ids both have).
  status check_draft(const session& draft) const;

 private:
  struct impl;
  explicit session(std::unique_ptr<impl> p);
  std::unique_ptr<impl> p_;
};

}  // namespace glia
