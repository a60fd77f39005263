// What the generation endpoints (OpenAI's chat and completions, Anthropic's messages) share before
// they answer: the prompt's token ids from a parsed request (the chat template rendered, tools and
// reasoning set up), how the reply will be read, and the jobs queued for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <httplib.h>

#include "server/job.h"
#include "server/reasoning_split.h"
#include "server/request.h"
#include "server/server_state.h"
#include "server/tool_calls.h"
#include "server/tool_request.h"

namespace glia::server {

// How long a handler waits for a job's events before it looks at its client again.
inline constexpr auto poll_interval = std::chrono::milliseconds(50);

// How a chat reply is read: for reasoning (a template that thinks, unless reasoning_format is none)
// and for tool calls (not without tools, or with tool_choice "none").
struct reply_reading {
  tool_options options;
  tool_syntax syntax = tool_syntax::none;
  std::optional<reasoning_tags> reasoning;  // the tags the reply reasons between, when it is split
  reasoning_start start = reasoning_start::outside;
  std::string before;  // mid_reasoning: the continued text's end where it may be the close tag's start
  bool reads_calls() const { return options.reads_calls(); }
};

// The token ids of every prompt: the chat's rendered messages, or each completions prompt; sets how
// the reply is read (and, for ignore_eos, bans the end tokens in r's sampling). A 400 for a prompt that does not fit the context, tools the template cannot
// show, a template that fails.
// check_fit false: a prompt is not checked against the context (fits_context; for counting its
// tokens, or an API that words the refusal its own way).
api_result<std::vector<std::vector<int32_t>>> build_prompts(server_state& st, completion_request& r, reply_reading& reading,
                                                            bool check_fit = true);
// A chat request's prompt text as its template renders it (a final message being continued cut where
// its content ends); `used` is the template. Errors as build_prompts'.
api_result<std::string> render_chat_prompt(server_state& st, completion_request& r, reply_reading& reading, const served_template*& used);

// A 400 when a logit bias names a token outside the vocabulary (build_prompts checks it; a route that
// builds its prompt otherwise must too).
std::optional<api_error> check_logit_bias(const session& s, const sampler_params& p);

// Whether a prompt of n_prompt tokens leaves room in the context for a generated token (a prompt being
// scored, echo, may fill it).
bool fits_context(const session& s, size_t n_prompt, bool scoring_only);

// The finish reason a client sees: a reply read as tool calls is "tool_calls", whether its end token
// came or max_tokens cut the whitespace a grammar allows after them; but a named function's is the
// generation's own (stop, or length for arguments cut short), as OpenAI and vLLM answer it.
finish_kind reported_finish(finish_kind k, const parsed_reply& reply, const reply_reading& reading);

// The usage of a request's jobs (responses.h usage_json; chat: with the reasoning's tokens): each
// prompt counted once, however many choices answer it.
nlohmann::json usage_of(const std::vector<std::shared_ptr<job>>& jobs, int n_per_prompt, bool chat);

// A job per choice, queued: each prompt n times, choice p * n + k; a prompt's choices sampled apart
// (seed + k: every prompt draws as it would alone, however a harness batches them). A 503 (with
// Retry-After set on `res`) when the queue is full or the server is shutting down.
api_result<std::vector<std::shared_ptr<job>>> queue_jobs(server_state& st, const completion_request& r,
                                                         const std::vector<std::vector<int32_t>>& prompts,
                                                         const httplib::Request& req, httplib::Response& res);

// A job's whole reply text, waited for; a client that leaves cancels it.
std::string wait_for_reply(job& j);
// The same, with its tokens' logprobs; a client that leaves cancels the request's every job, and so
// does a job that fails: its error is returned.
std::optional<api_error> wait_for_events(job& j, const std::vector<std::shared_ptr<job>>& request, std::string& text,
                                         std::vector<token_logprob>& lps);

// A 503 while the model loads or the server drains (Retry-After set on `res`); nullopt when ready.
std::optional<api_error> refuse_unready(server_state& st, httplib::Response& res);

}  // namespace glia::server
