// Synthetic models (the `glia synth` tool): random weights with the exact geometry, metadata and
// tensor names of real models, so that speed can be measured on a 1B-class model without
// downloading one. The files are valid GGUF as llama.cpp writes and loads them; the text they
// generate is meaningless.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/quantize.h"
#include "model/rope_scaling.h"

namespace glia {

struct synth_preset {
  const char* name;  // "tinyllama"
  const char* model_name;  // general.name
  const char* arch;  // general.architecture
  int64_t n_embd;
  int n_layer;
  int n_head;
  int n_head_kv;
  int head_dim;
  int64_t n_ff;
  int64_t n_vocab;
  int n_ctx;
  double rope_base;
  double rope_base_swa;  // gemma3 local layers (0: no sliding layers)
  int sliding_window;    // gemma3
  double rms_eps;
  bool tied;             // no output.weight: the LM head is the token embedding
  bool qkv_bias;         // qwen2
  bool gemma_norms;      // qk-norm and post-attention / post-FFN norms (gemma3)
  llama3_rope_scaling rope_scaling;
};

std::span<const synth_preset> synth_presets();
const synth_preset* find_synth_preset(std::string_view name);


// A SentencePiece-style vocabulary (tokenizer.ggml.model "llama"): <unk> <s> </s>, the 256 byte
// tokens <0x00>..<0xFF>, then single characters and made-up pieces built by joining two earlier
// pieces (so every piece is reachable by merges), scored -rank.
struct synth_vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // llama.cpp token types: 1 normal, 2 unknown, 3 control, 6 byte
};
// The smallest and largest n_vocab make_synth_vocab takes: room for the fixed tokens and the single
// characters; 2^24.
int64_t synth_min_vocab();
constexpr int64_t synth_max_vocab = int64_t(1) << 24;
// Errors: n_vocab outside synth_min_vocab()..synth_max_vocab.
result<synth_vocab> make_synth_vocab(int64_t n_vocab, uint64_t seed);

struct synth_options {
  const synth_preset* preset = nullptr;
  file_type ftype = file_type::mostly_q8_0;
  uint64_t seed = 42;
  int n_threads = 0;               // <= 0: one per hardware thread
  std::optional<int> n_layer;      // override (tests, quick experiments)
  std::optional<int64_t> n_vocab;  // override
  std::function<void(const std::string&)> log;
  const std::atomic<bool>* cancel = nullptr;  // when it becomes true, the run stops between tensors
};

struct synth_summary {
  int n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t bytes = 0;  // file size
};

// Writes the model to `path`, generating and quantizing one tensor at a time (row-parallel).
// Weights: matrices N(0, 0.02^2), token embedding / output N(0, 0.05^2), norms 1 + N(0, 0.02^2),
// biases N(0, 0.02^2); each row drawn from its own stream (seed, tensor, row), so the file does not
// depend on the thread count.
result<synth_summary> synth_model(const synth_options& opts, const std::string& path);

}  // namespace glia
