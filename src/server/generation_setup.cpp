#include "server/generation_setup.h"

#include <fmt/core.h>

#include <random>

#include "core/json_text.h"
#include "server/chat_prefill.h"
#include "server/connection.h"
#include "server/responses.h"

namespace glia::server {
namespace {

using nlohmann::json;

// The template for a chat request and how its replies are read; a 400 when tools were asked for
// but the template cannot show them to the model, or writes calls in no syntax glia reads.
api_result<const served_template*> chat_format_for(server_state& st, completion_request& r, reply_reading& reading) {
  if (r.tools.tools.is_null()) return &st.chat_fmt;
  const served_template& f = st.tool_chat_fmt;
  if (!r.tools.reads_calls()) return &f;
  if (!f.reads_tools)
    return bad_request("the model's chat template does not read 'tools', so the model would not see them "
                       "(give a template that does with --chat-template, or set 'tool_choice' to \"none\")",
                       "tools");
  reading.options = r.tools;
  reading.syntax = f.syntax;
  if (r.tools.mode == tool_mode::automatic && reading.syntax == tool_syntax::none)
    return bad_request("glia does not know how this model's chat template writes tool calls; ask for one with 'tool_choice' "
                       "\"required\" or a named function (the reply is then JSON)",
                       "tool_choice");
  // Some models write their call markers as control tokens, which text leaves out otherwise.
  if (r.tools.mode == tool_mode::automatic) r.params.shown_control_tokens = tool_marker_tokens(reading.syntax);
  return &f;
}

// The id of the token a text is, as the template's text is read (special tokens parsed); -1 when it
// takes more than one.
int32_t single_token(const session& s, std::string_view text) {
  auto t = s.tokenize(std::string(text), false, true);
  return t && t->size() == 1 ? t->front() : -1;
}

// The reasoning's tags as the sampler counts its tokens, and the tokens that close it once `budget`
// are spent (-1: never): the message, then the close tag.
api_result<reasoning_limit> reasoning_limit_for(const session& s, const reasoning_tags& tags, reasoning_start start, const std::string& before,
                                                int budget, const std::string& message) {
  reasoning_limit l{std::string(tags.open), std::string(tags.close), start != reasoning_start::outside, before, budget, {}};
  if (budget < 0) return l;
  auto closing = s.tokenize(message + l.close, false, true);
  if (!closing || closing->empty())
    return api_error(500, fmt::format("the reasoning budget's closing text cannot be tokenized: {}", closing ? "it is empty" : closing.message()));
  l.forced = std::move(*closing);
  return l;
}

// Prompt tokens as usage counts them: each prompt once, however many choices answer it.
int prompt_tokens_of(const std::vector<std::shared_ptr<job>>& jobs, int n_per_prompt) {
  int n = 0;
  for (size_t i = 0; i < jobs.size(); i += size_t(n_per_prompt)) n += jobs[i]->n_prompt;
  return n;
}

int generated_tokens_of(const std::vector<std::shared_ptr<job>>& jobs) {
  int n = 0;
  for (const auto& j : jobs) n += j->n_generated;
  return n;
}

}  // namespace

api_result<std::string> render_chat_prompt(server_state& st, completion_request& r, reply_reading& reading, const served_template*& used) {
  auto served = chat_format_for(st, r, reading);
  if (!served.ok()) return served.error();
  used = served.value();
  fit_call_ids(used->syntax, r.messages);
  json kwargs = st.template_kwargs;
  kwargs.update(r.template_kwargs);
  // As llama-server: templates with a thinking switch (Qwen3, Gemma 4, llama.cpp's R1 and QwQ
  // templates) think unless a budget of 0 or the variable says otherwise.
  if (!kwargs.contains("enable_thinking")) kwargs["enable_thinking"] = r.reasoning_budget.value_or(st.opts.reasoning_budget) != 0;
  nlohmann::ordered_json vars = nlohmann::ordered_json::parse(json_text(kwargs));
  if (!r.tools.tools.is_null()) vars["tools"] = r.tools.tools;
  auto text = st.sess().render_chat(used->format, ordered_json_text(r.messages), r.add_generation_prompt, ordered_json_text(vars));
  if (!text) return bad_request(fmt::format("the chat template failed: {}", text.message()), "messages");
  if (r.continue_final_message) {
    const auto end = continued_message_end(*text, r.messages.back()["content"].get<std::string>());
    if (!end)
      return bad_request("the chat template does not write the final message's content, so it cannot be continued", "continue_final_message");
    text->resize(*end);
  }
  if (text->empty()) return bad_request("the chat template rendered nothing for these messages", "messages");
  return std::move(*text);
}

api_result<std::vector<std::vector<int32_t>>> build_prompts(server_state& st, completion_request& r, reply_reading& reading, bool check_fit) {
  const session& s = st.sess();
  std::vector<std::vector<int32_t>> all;
  if (r.chat) {
    const served_template* used = nullptr;
    auto rendered = render_chat_prompt(st, r, reading, used);
    if (!rendered.ok()) return rendered.error();
    const served_template& tmpl = *used;
    std::string* text = &rendered.value();
    if (tmpl.reasoning) {
      const reasoning_tags& tags = *tmpl.reasoning;
      // The prompt opened it, or the message being continued did and has not closed it.
      reasoning_start start = reasoning_start::outside;
      std::string before;
      const auto& last = r.messages.back()["content"];
      if (prompt_opens_reasoning(*text, tags)) {
        start = reasoning_start::after_open_tag;
      } else if (r.continue_final_message && last.is_string() && leaves_reasoning_open(last.get<std::string>(), tags)) {
        start = reasoning_start::mid_reasoning;
        const std::string& text_so_far = last.get_ref<const std::string&>();
        before = text_so_far.substr(partial_tag_at(text_so_far, tags.close));
      }
      const std::string reasoning_before = before;
      if (r.split_reasoning.value_or(st.opts.split_reasoning)) {
        reading.reasoning = tags;
        reading.start = start;
        reading.before = std::move(before);
        // Gemma 4's tags are control tokens, which text leaves out otherwise (and a converter may
        // have made <think> one).
        r.params.shown_control_tokens.emplace_back(tags.open_token);
        r.params.shown_control_tokens.emplace_back(tags.close);
        // A constraint (a schema, a grammar, a forced tool call) holds for the answer, after the
        // reasoning, as vLLM applies it: a reply the model is not let think in is a worse one. The
        // reply may open it where its open tag is one token (Gemma 4's is two: the token after the
        // first could leave the reasoning unopened while the grammar waited), and not where it
        // continues a message.
        const int32_t opener = r.continue_final_message ? -1 : single_token(s, tags.open);
        if (r.params.sampling.grammar)
          r.params.sampling.grammar_after = grammar_after_reasoning{opener};  // the tags: sampling.reasoning, set below
      }
      // The reasoning is the model's own unless a constraint holds from the first token
      // (reasoning_format none): then there is none to count or end.
      if (!r.params.sampling.grammar || r.params.sampling.grammar_after) {
        auto limit = reasoning_limit_for(s, tags, start, reasoning_before, r.reasoning_budget.value_or(st.opts.reasoning_budget),
                                         r.reasoning_budget_message.value_or(st.opts.reasoning_budget_message));
        if (!limit.ok()) return limit.error();
        r.params.sampling.reasoning = std::move(limit.value());
      }
    }
    auto t = s.tokenize_chat(*text);
    if (!t) return bad_request(t.message(), "messages");
    all.push_back(std::move(*t));
    if (!tmpl.format.end_of_turn.empty()) r.params.stop.push_back(tmpl.format.end_of_turn);
  } else {
    for (const auto& p : r.prompts) {
      std::vector<int32_t> ids;
      if (p.is_ids) {
        for (int64_t id : p.ids) {
          if (id >= s.n_vocab())
            return bad_request(fmt::format("prompt token id {} is outside the vocabulary (0..{})", id, s.n_vocab() - 1), "prompt");
          ids.push_back(int32_t(id));
        }
      } else {
        auto t = s.tokenize(p.text, true, true);
        if (!t) return bad_request(t.message(), "prompt");
        ids = std::move(*t);
      }
      all.push_back(std::move(ids));
    }
  }
  const char* field = r.chat ? "messages" : "prompt";
  for (const auto& ids : all) {
    if (ids.empty()) return bad_request("the prompt is empty", field);
    if (check_fit && !fits_context(s, ids.size(), r.params.echo)) {
      api_error e = bad_request(fmt::format("the prompt has {} tokens, but the context holds {} (and needs room for at least one generated token)",
                                            ids.size(), s.n_ctx()), field);
      e.code = "context_length_exceeded";
      return e;
    }
  }
  if (r.params.ignore_eos) s.forbid_end_of_generation(r.params.sampling);
  if (auto e = check_logit_bias(s, r.params.sampling)) return *e;
  return all;
}

std::optional<api_error> check_logit_bias(const session& s, const sampler_params& p) {
  for (const auto& [id, bias] : p.logit_bias)
    if (id >= s.n_vocab())
      return bad_request(fmt::format("logit_bias token id {} is outside the vocabulary (0..{})", id, s.n_vocab() - 1), "logit_bias");
  return std::nullopt;
}

bool fits_context(const session& s, size_t n_prompt, bool scoring_only) {
  // At least one position must stay free for a generated token, but for a prompt being scored: the
  // one token it may ask for (as lm-evaluation-harness does) is sampled, never evaluated.
  return int64_t(n_prompt) < s.n_ctx() || (int64_t(n_prompt) == s.n_ctx() && scoring_only);
}

finish_kind reported_finish(finish_kind k, const parsed_reply& reply, const reply_reading& reading) {
  if (reply.calls.empty() || (k != finish_kind::stop && k != finish_kind::length) || reading.options.mode == tool_mode::named) return k;
  return finish_kind::tool_calls;
}

nlohmann::json usage_of(const std::vector<std::shared_ptr<job>>& jobs, int n_per_prompt, bool chat) {
  int n_reasoning = 0;
  for (const auto& j : jobs) n_reasoning += j->n_reasoning;
  return usage_json(prompt_tokens_of(jobs, n_per_prompt), generated_tokens_of(jobs), chat ? n_reasoning : -1);
}

api_result<std::vector<std::shared_ptr<job>>> queue_jobs(server_state& st, const completion_request& r,
                                                         const std::vector<std::vector<int32_t>>& prompts,
                                                         const httplib::Request& req, httplib::Response& res) {
  std::vector<std::shared_ptr<job>> jobs;
  const int client_fd = find_connection_fd(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  for (size_t p = 0; p < prompts.size(); ++p)
    for (int k = 0; k < r.n; ++k) {
      auto j = std::make_shared<job>();
      j->prompt = prompts[p];
      j->params = r.params;
      // A random seed is 32 bits, as llama-server's: reported back (native generation_settings), it
      // can be sent again, and a JavaScript client reads it whole.
      j->params.sampling.seed = r.params.seed_given ? r.params.sampling.seed + uint64_t(k) : uint64_t(std::random_device{}());
      if (r.params.echo) j->echo_text = r.prompts[p].is_ids ? st.sess().detokenize(j->prompt, true) : r.prompts[p].text;
      j->client_fd = client_fd;
      jobs.push_back(std::move(j));
    }
  for (size_t i = 1; i < jobs.size(); ++i) jobs[i]->request_cancelled = jobs[0]->request_cancelled;
  switch (st.sched->submit_all(jobs)) {
    case submit_result::accepted: return jobs;
    case submit_result::queue_full:
      st.stats.rejected_queue_full++;
      res.set_header("Retry-After", "1");
      return api_error{503, "all slots are busy and the queue is full; retry later"};
    case submit_result::shutting_down: break;
  }
  res.set_header("Retry-After", "1");
  return api_error{503, "the server is shutting down"};
}

std::optional<api_error> wait_for_events(job& j, const std::vector<std::shared_ptr<job>>& request, std::string& text,
                                         std::vector<token_logprob>& lps) {
  std::vector<gen_event> events;
  for (bool done = false; !done;) {
    events.clear();
    done = j.wait(events, poll_interval);
    for (auto& e : events) {
      text += e.text;
      for (auto& lp : e.logprobs) lps.push_back(std::move(lp));
    }
    if (!done && peer_closed(j.client_fd)) {
      j.cancel = true;
      for (const auto& other : request) other->cancel = true;
    }
  }
  if (j.reason != finish_kind::error) return std::nullopt;
  for (const auto& other : request) other->cancel = true;
  return api_error{j.error_status, j.error};
}

std::string wait_for_reply(job& j) {
  std::string text;
  std::vector<token_logprob> lps;
  (void)wait_for_events(j, {}, text, lps);  // the caller reads j.reason
  return text;
}

std::optional<api_error> refuse_unready(server_state& st, httplib::Response& res) {
  if (st.ready.load() && !st.draining.load()) return std::nullopt;
  res.set_header("Retry-After", "1");
  return api_error{503, st.ready.load() ? "the server is shutting down" : "the model is still loading"};
}

}  // namespace glia::server
