// Loaded-once inputs that targets fuzz against (vocabularies of each tokenizer kind). Each is read
// from the shared test-data pack on first use and kept for the process (loading a 128k-token
// tokenizer.json per input would make a target useless); a missing file ends the run (setup, not a
// finding). A new tokenizer kind is one more row in fixtures.cpp's table.
#pragma once

#include <string_view>

#include "tokenizer/tokenizer.h"

namespace glia::fuzz {

// The Brown model's SentencePiece vocabulary (1024 tokens, byte fallback), from models/brown-f32.gguf.
const tokenizer& brown_tokenizer();

// Every tokenizer kind the engine implements, by index in [0, n_tokenizer_kinds()):
//   0 brown        GGUF "llama" (SentencePiece, byte fallback)
//   1 llama2-hf    tokenizer.json BPE with byte_fallback, Metaspace-style normalizer (Llama 2 / Mistral)
//   2 llama3-hf    tokenizer.json byte-level BPE, Split pre-tokenizer regex
//   3 qwen3-hf     tokenizer.json byte-level BPE, NFC normalizer, another regex
//   4 gpt2-gguf    GGUF "gpt2" BPE, pre-tokenizer regexes chosen by tokenizer.ggml.pre
//   5 deepseek-llm GGUF "gpt2" BPE with deepseek-llm's multi-regex pre-tokenizer
int n_tokenizer_kinds();
std::string_view tokenizer_kind_name(int kind);
const tokenizer& tokenizer_of_kind(int kind);
// Whether `kind` is a Hugging Face tokenizer (decode always gives well-formed UTF-8).
bool tokenizer_kind_is_hf(int kind);

}  // namespace glia::fuzz
