// Metadata keys under which a translated Hugging Face checkpoint (model/hf/) carries its tokenizer
// files as they are, for the tokenizer layer to read. tokenizer.huggingface.json is the GGUF spec's
// key for the whole tokenizer.json; the other two are glia's.
#pragma once

#include <string_view>

#include "gguf/gguf.h"

namespace glia::gguf {

inline constexpr std::string_view key_hf_tokenizer_json = "tokenizer.huggingface.json";
inline constexpr std::string_view key_hf_tokenizer_config = "tokenizer.huggingface.config";
inline constexpr std::string_view key_hf_chat_template = "tokenizer.huggingface.chat_template";  // .NAME: named ones
inline constexpr std::string_view key_hf_chat_template_json = "tokenizer.huggingface.chat_template_json";
// config.json's and generation_config.json's eos_token_id: more end-of-generation ids.
inline constexpr std::string_view key_hf_eos_token_ids = "tokenizer.huggingface.eos_token_ids";
// config.json's (or generation_config.json's) bos_token_id, for a tokenizer that names none itself.
inline constexpr std::string_view key_hf_bos_token_id = "tokenizer.huggingface.bos_token_id";
// True in a GGUF whose tokenizer.ggml.* keys and tokenizer.chat_template glia wrote from the
// tokenizer.json and templates it carries (tokenizer/vocab_export.h), for llama.cpp.
inline constexpr std::string_view key_hf_ggml_derived = "tokenizer.huggingface.ggml_keys_derived";

// Whether glia reads the carried Hugging Face tokenizer files rather than tokenizer.ggml.*: in a
// translated checkpoint (which has no ggml keys) and in a GGUF whose ggml keys glia derived from them.
// Other tools may store tokenizer.huggingface.json beside their own ggml keys; those keys rule there.
inline bool hf_tokenizer_rules(const file& f) {
  return !f.find("tokenizer.ggml.model") || f.get_bool(key_hf_ggml_derived).value_or(false);
}

}  // namespace glia::gguf
