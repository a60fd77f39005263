#include "server/job.h"

namespace glia::server {

void job::emit(gen_event ev) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

void job::finish(finish_kind k, std::string err, int err_status) {
  {
    std::lock_guard lock(mu_);
    reason = k;
    error = std::move(err);
    error_status = err_status;
    done_ = true;
  }
  cv_.notify_all();
}

bool job::wait(std::vector<gen_event>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !events_.empty(); });
  for (auto& e : events_) out.push_back(std::move(e));
  events_.clear();
  return done_;
}

}  // namespace glia::server
