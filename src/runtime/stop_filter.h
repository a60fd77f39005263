// Holds back generated text that might be the start of a stop string, so a stop string is never sent
// to the user or client, even when it arrives split across tokens (and so across SSE chunks).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace glia {

class stop_filter {
 public:
  explicit stop_filter(std::vector<std::string> stops);
  // Adds text and returns what can be sent now. Sets `hit` when a stop string appeared: the returned
  // text is then everything before it, and the rest is dropped.
  std::string push(std::string_view text, bool& hit);
  // The held-back text at the end of generation (when no stop string was hit).
  std::string flush();
  // The stop string that was hit (the first to appear; of those starting there, the first given);
  // empty before one is.
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string matched_;
  std::string pending_;
};

}  // namespace glia
