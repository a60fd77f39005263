// Metadata keys under which a translated Hugging Face checkpoint (model/hf/) carries its tokenizer
// files as they are, for the tokenizer layer to read. tokenizer.huggingface.json is the GGUF spec's
// key for the whole tokenizer.json; the other two are glia's.
#pragma once

#include <string_view>

namespace glia::gguf {

inline constexpr std::string_view key_hf_tokenizer_json = "tokenizer.huggingface.json";
inline constexpr std::string_view key_hf_tokenizer_config = "tokenizer.huggingface.config";
inline constexpr std::string_view key_hf_chat_template = "tokenizer.huggingface.chat_template";  // .NAME: named ones
inline constexpr std::string_view key_hf_chat_template_json = "tokenizer.huggingface.chat_template_json";
// config.json's and generation_config.json's eos_token_id: more end-of-generation ids.
inline constexpr std::string_view key_hf_eos_token_ids = "tokenizer.huggingface.eos_token_ids";

}  // namespace glia::gguf
