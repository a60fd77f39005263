// Reading the parts of a Hugging Face tokenizer.json that describe the text pipeline (normalizer,
// pre_tokenizer, decoder) and the post-processor's special-token template into glia's specs.
// Unknown component types are errors that name the type, never silently ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/pipeline.h"

namespace glia::tok {

status parse_normalizer(const nlohmann::json& j, std::vector<normalizer_spec>& out);
status parse_pre_tokenizer(const nlohmann::json& j, std::vector<pre_tokenizer_spec>& out);
status parse_decoder(const nlohmann::json& j, std::vector<decoder_spec>& out);

// The special tokens a post-processor puts around a single sequence, as token texts.
struct template_spec {
  bool present = false;  // false: the post-processor adds nothing (none, ByteLevel)
  std::vector<std::string> prefix, suffix;
};
status parse_post_processor(const nlohmann::json& j, template_spec& out);

}  // namespace glia::tok
