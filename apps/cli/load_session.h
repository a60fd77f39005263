// Opens a session for run/chat/logits: a progress bar on stderr when reading the model takes more
// than a moment, then one line with the file size, how it was loaded and the resident memory.
#pragma once

#include <memory>

#include "glia/session.h"

namespace glia::cli {

result<std::unique_ptr<session>> open_session(session_options opts);

}  // namespace glia::cli
