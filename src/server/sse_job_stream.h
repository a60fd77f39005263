// One job's reply as an SSE stream in the shape a Writer gives it (Anthropic's events, the Responses
// API's): between calls of the HTTP library's content provider it waits briefly for the job's events
// and writes what the Writer makes of them; a quiet stream gets the Writer's keep-alive. A Writer has
//   std::optional<std::string> start(const job&, bool now)  the opening events; nullopt to wait (not when now)
//   std::string push(std::string_view text) (or push_event(const gen_event&), for the tokens' logprobs too),
//   finish(const job&), error(const api_error&), keep_alive()
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>

#include "server/generation_setup.h"
#include "server/job.h"
#include "server/server_state.h"
#include "server/sse.h"

namespace glia::server {

template <class Writer>
class sse_job_stream {
 public:
  sse_job_stream(Writer w, std::shared_ptr<job> j, std::unique_ptr<in_flight_guard> guard)
      : w_(std::move(w)), j_(std::move(j)), guard_(std::move(guard)) {}

  bool step(httplib::DataSink& sink) {
    std::vector<gen_event> events;
    const bool done = j_->wait(events, poll_interval);
    const auto now = std::chrono::steady_clock::now();
    const bool quiet = now - last_write_ >= sse_keep_alive_interval;
    std::string out;
    if (!started_) {
      std::optional<std::string> opening = w_.start(*j_, !events.empty() || done || quiet);
      if (!opening) return true;
      out = std::move(*opening);
      started_ = true;
    }
    for (const auto& e : events) {
      if constexpr (requires { w_.push_event(e); }) {
        out += w_.push_event(e);
      } else {
        out += w_.push(e.text);
      }
    }
    if (done) {
      if (j_->reason == finish_kind::cancelled) return false;
      out += j_->reason == finish_kind::error ? w_.error(api_error{j_->error_status, j_->error}) : w_.finish(*j_);
    }
    if (out.empty() && quiet) out = w_.keep_alive();
    if (!out.empty()) {
      if (!sink.write(out.data(), out.size())) {
        j_->cancel = true;
        return false;
      }
      last_write_ = now;
    }
    if (done) sink.done();
    return true;
  }

  // The response ended (or the client left): the engine lets go of the job before the request stops
  // counting as in flight.
  void end(bool success) {
    if (!success) j_->cancel = true;
    std::vector<gen_event> ignored;
    while (!j_->wait(ignored, poll_interval)) ignored.clear();
    guard_.reset();
  }

 private:
  Writer w_;
  std::shared_ptr<job> j_;
  std::unique_ptr<in_flight_guard> guard_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

// Serves `w`'s stream of job `j` as the response.
template <class Writer>
void stream_job(const httplib::Request& req, httplib::Response& res, Writer w, std::shared_ptr<job> j, std::unique_ptr<in_flight_guard> guard) {
  auto s = std::make_shared<sse_job_stream<Writer>>(std::move(w), std::move(j), std::move(guard));
  set_event_stream(req, res, [s](size_t, httplib::DataSink& sink) { return s->step(sink); }, [s](bool success) { s->end(success); });
}

}  // namespace glia::server
