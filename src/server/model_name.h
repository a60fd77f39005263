// The model id the server lists (/v1/models) and answers with.
#pragma once

#include <string>

namespace glia::server {

// A GGUF file's name, as llama-server; for a checkpoint folder (or its config.json) the model's
// general.name when it has one (org/name for a Hugging Face cache folder), else the folder's name.
std::string served_model_name(const std::string& model_path, const std::string& general_name);

}  // namespace glia::server
