// continue_final_message (an assistant prefill): where the rendered conversation is cut so that the
// reply continues the last message.
#pragma once

#include <optional>
#include <string>

namespace glia::server {

// As transformers finds it (vLLM uses its code): at the last occurrence of the message's stripped
// text, keeping the message's trailing spaces when the template kept them. nullopt: the text is not
// in the rendering (or is only spaces).
std::optional<size_t> continued_message_end(const std::string& rendered, const std::string& message);

}  // namespace glia::server
