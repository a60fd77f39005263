// One generation request as the scheduler sees it, and the channel its results travel back on: the
// engine thread pushes events (text pieces, per-token logprobs) and finally a finish reason; the
// HTTP handler thread waits for them and writes them to the client.
#pragma once

#include <atomic>
#include <memory>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/connection.h"
#include "server/request.h"

namespace glia::server {

// tool_calls: a stop whose reply was read as tool calls (set by the HTTP side, never by the engine).
enum class finish_kind { none, stop, length, cancelled, error, tool_calls };

struct token_logprob {
  int32_t id = -1;
  std::string token;
  float logprob = 0.0f;
  // Characters of the returned text before this token's text (legacy completions' text_offset): from
  // the text itself, so a token shown as nothing (a control token) or cut by a stop string counts
  // what the client sees.
  size_t text_offset = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely alternatives, best first
  std::vector<int32_t> top_ids;                     // their ids
  bool scored = true;  // false for an echoed prompt's first token, which nothing predicts (null)
};

struct gen_event {
  std::string text;                     // text released to the client (may be empty)
  std::vector<token_logprob> logprobs;  // one per token whose text starts in this event's text
};

class job {
 public:
  // Set before submit().
  std::vector<int32_t> prompt;
  generation_params params;
  std::string echo_text;  // with params.echo: the prompt as the reply shows it
  int client_fd = -1;  // the client's socket, polled for a disconnect before every step (-1: unknown)
  // Shared by a request's choices: the first of them cancelled counts the request as cancelled.
  std::shared_ptr<std::atomic<bool>> request_cancelled = std::make_shared<std::atomic<bool>>(false);
  // Whether this job's cancellation is the first of its request's (to count it once).
  bool first_cancelled_of_request() { return !request_cancelled->exchange(true); }
  std::atomic<bool> cancel{false};
  // The handler asked to stop, or the client has gone (its socket closed or reset).
  bool abandoned() const { return cancel.load() || peer_closed(client_fd); }

  // Engine side.
  void emit(gen_event ev);
  // An error's status: 500 for the engine's failures, 400 where the request asked for what cannot be.
  void finish(finish_kind k, std::string error = {}, int error_status = 500);

  // Handler side: waits up to `timeout` for events and moves them into `out`; returns true once the
  // job has finished and every event has been taken.
  bool wait(std::vector<gen_event>& out, std::chrono::milliseconds timeout);

  // Valid after finish (written before it, under the same lock).
  finish_kind reason = finish_kind::none;
  std::string error;
  int error_status = 500;
  int n_prompt = 0;
  // Prompt tokens read from the slot's cache, set when the job reaches a slot (-1 before): a handler
  // may read it before the job finishes.
  std::atomic<int> n_reused{-1};
  int n_generated = 0;
  int n_reasoning = 0;  // of n_generated, the reasoning's (sampler::reasoning_tokens)
  std::string stop_string;  // finish_kind::stop by a stop string (the template's end of turn, too): which
  // When a slot took the job, when its prompt was evaluated, when it finished (llama-server's timings).
  std::chrono::steady_clock::time_point t_slot, t_prefilled, t_finished;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<gen_event> events_;
  bool done_ = false;
};

}  // namespace glia::server
