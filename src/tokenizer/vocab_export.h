// Writing a Hugging Face tokenizer (tokenizer.json, as a checkpoint folder carries it) as llama.cpp's
// tokenizer.ggml.* keys, so that a GGUF quantized from a folder also loads in llama.cpp and ollama.
//
// Byte-level BPE (Llama 3, Qwen2/3) becomes "gpt2" with the tokenizer.ggml.pre name whose
// pre-tokenizer cuts a test battery into the same words as the tokenizer.json one (llama.cpp's
// converter recognizes its tokenizers by a hash of their output instead, which needs the reference
// library). SentencePiece-style BPE with byte fallback (Mistral, Llama 2, Gemma) becomes "llama",
// whose merge order comes from token scores: a token scores minus the rank of the first merge that
// makes it, so llama.cpp's highest-score-first merging replays tokenizer.json's lowest-rank-first one.
// glia itself keeps reading tokenizer.huggingface.json from such a file (vocab_gguf.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "gguf/gguf.h"
#include "tokenizer/vocab.h"

namespace glia::tok {

// The tokenizer.ggml.* keys for `v` (a vocabulary loaded from tokenizer.json), with the vocabulary
// padded to n_rows tokens ("[PAD<id>]", unused) as the converter pads it to the embedding's rows.
// Fails, saying why and writing nothing, for a tokenizer llama.cpp's tokenizers cannot reproduce.
// Also sets tokenizer.huggingface.ggml_keys_derived, so that glia keeps reading the tokenizer.json.
struct checkpoint_ids {  // config.json's, for a tokenizer that names no BOS / EOS itself
  int32_t bos = no_token, eos = no_token;
};
status write_ggml_vocab(const vocab& v, int64_t n_rows, const checkpoint_ids& ids, gguf::writer& out);

// For a file that carries tokenizer.huggingface.json (a translated checkpoint) and no
// tokenizer.ggml.model: its tokenizer as write_ggml_vocab writes it. Nothing for other files.
// An error where that tokenizer.json does not load (a file that no engine, glia included, could
// run); where the keys cannot express it, nothing is written and the reason comes back (empty
// where the keys were written or there was nothing to do): glia reads the tokenizer.json the file
// keeps.
result<std::string> write_ggml_tokenizer(const gguf::file& in, gguf::writer& out);

}  // namespace glia::tok
