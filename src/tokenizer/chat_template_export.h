// A translated checkpoint's chat templates as llama.cpp's converter writes them
// (tokenizer.chat_template, tokenizer.chat_template.NAME, tokenizer.chat_templates), beside the
// tokenizer keys of vocab_export.h, so that llama.cpp and ollama find them in a quantized GGUF.
#pragma once

#include "core/status.h"
#include "gguf/gguf.h"

namespace glia::tok {

// For a file whose tokenizer glia reads from the carried Hugging Face files and that has no
// tokenizer.chat_template: its templates. Nothing for other files. Fails, writing nothing, where two
// names would share a key or a template does not load.
status write_ggml_chat_templates(const gguf::file& in, gguf::writer& out);

}  // namespace glia::tok
