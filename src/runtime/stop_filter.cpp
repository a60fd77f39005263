#include "runtime/stop_filter.h"

#include <algorithm>
#include <utility>

namespace glia {

stop_filter::stop_filter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string stop_filter::push(std::string_view text, bool& hit) {
  pending_ += text;
  hit = false;
  size_t cut = std::string::npos;
  for (const auto& s : stops_)
    if (const size_t at = pending_.find(s); at < cut) {
      cut = at;
      matched_ = s;
    }
  if (cut != std::string::npos) {
    hit = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Keep the longest suffix that is a proper prefix of some stop string: it may still complete.
  size_t keep = 0;
  for (const auto& s : stops_)
    for (size_t len = std::min(s.size() - 1, pending_.size()); len > keep; --len)
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string stop_filter::flush() { return std::exchange(pending_, std::string()); }

}  // namespace glia
