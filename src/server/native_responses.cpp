#include "server/native_responses.h"

#include <chrono>
#include <cmath>

#include "core/json_text.h"
#include "server/sse.h"

namespace glia::server {
namespace {

using ojson = nlohmann::ordered_json;

ojson bytes_of(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

// llama-server's completion_probabilities: per token its id, text, bytes and log probability, and the
// n_probs most likely alternatives; with post_sampling_probs, probabilities ("prob", "top_probs")
// among the candidates the sampler's chain left.
ojson probabilities(const std::vector<token_logprob>& lps, bool post_sampling) {
  const char* value = post_sampling ? "prob" : "logprob";
  const auto shown = [post_sampling](float logprob) { return post_sampling ? std::exp(double(logprob)) : double(logprob); };
  ojson out = ojson::array();
  for (const token_logprob& lp : lps) {
    ojson top = ojson::array();
    for (size_t i = 0; i < lp.top.size(); ++i)
      top.push_back({{"id", i < lp.top_ids.size() ? lp.top_ids[i] : -1},
                     {"token", lp.top[i].first},
                     {"bytes", bytes_of(lp.top[i].first)},
                     {value, shown(lp.top[i].second)}});
    out.push_back({{"id", lp.id},
                   {"token", lp.token},
                   {"bytes", bytes_of(lp.token)},
                   {value, shown(lp.logprob)},
                   {post_sampling ? "top_probs" : "top_logprobs", std::move(top)}});
  }
  return out;
}

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

ojson timings(const job& j) {
  const int prompt_n = j.n_prompt - std::max(0, j.n_reused.load());
  const double prompt_ms = ms_between(j.t_slot, j.t_prefilled), predicted_ms = ms_between(j.t_prefilled, j.t_finished);
  const auto per_token = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  const auto per_second = [](double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return {{"cache_n", std::max(0, j.n_reused.load())},
          {"prompt_n", prompt_n},
          {"prompt_ms", prompt_ms},
          {"prompt_per_token_ms", per_token(prompt_ms, prompt_n)},
          {"prompt_per_second", per_second(prompt_ms, prompt_n)},
          {"predicted_n", j.n_generated},
          {"predicted_ms", predicted_ms},
          {"predicted_per_token_ms", per_token(predicted_ms, j.n_generated)},
          {"predicted_per_second", per_second(predicted_ms, j.n_generated)}};
}

// The generated tokens' ids with return_tokens (the routes ask every token's logprob, so each has one).
ojson token_ids(const native_meta& m, const std::vector<token_logprob>& lps) {
  ojson ids = ojson::array();
  if (m.return_tokens)
    for (const token_logprob& lp : lps) ids.push_back(lp.id);
  return ids;
}

// llama-server's response_fields: only the values at these paths, each under its path as the key
// ("timings/prompt_n": the prompt_n of timings); paths that lead nowhere are left out.
ojson only_fields(const ojson& r, const std::vector<std::string>& paths) {
  if (paths.empty()) return r;
  ojson out = ojson::object();
  for (const std::string& path : paths) {
    const ojson* at = &r;
    for (size_t from = 0; at && from <= path.size();) {
      const size_t slash = std::min(path.find('/', from), path.size());
      const std::string key = path.substr(from, slash - from);
      at = at->is_object() && at->contains(key) ? &(*at)[key] : nullptr;
      from = slash + 1;
    }
    if (at) out[path] = *at;
  }
  return out;
}

const char* stop_type(const job& j) {
  if (j.reason == finish_kind::length) return "limit";
  if (j.reason == finish_kind::stop) return j.stop_string.empty() ? "eos" : "word";
  return "none";
}

}  // namespace

ojson native_settings(const generation_params& p) {
  const sampler_params& s = p.sampling;
  ojson bias = ojson::array();
  for (const auto& [id, b] : s.logit_bias) bias.push_back({id, std::isinf(b) && b < 0 ? ojson(false) : ojson(b)});
  return {{"n_predict", p.max_tokens},
          {"seed", s.seed},
          {"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"typical_p", s.typical_p},
          {"xtc_probability", s.xtc_probability},
          {"xtc_threshold", s.xtc_threshold},
          {"repeat_last_n", s.repeat_last_n},
          {"repeat_penalty", s.repeat_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"dry_multiplier", s.dry_multiplier},
          {"dry_base", s.dry_base},
          {"dry_allowed_length", s.dry_allowed_length},
          {"dry_penalty_last_n", s.dry_penalty_last_n},
          {"dry_sequence_breakers", s.dry_sequence_breakers},
          {"mirostat", 0},
          {"min_keep", s.min_keep},
          {"stop", p.stop},
          {"ignore_eos", p.ignore_eos},
          {"stream", p.stream},
          {"n_probs", p.top_logprobs},
          {"grammar", s.grammar ? "(constrained)" : ""},
          {"logit_bias", std::move(bias)}};
}

ojson native_result(const native_meta& m, const job& j, int index, const std::string& content, const std::vector<token_logprob>& lps,
                    bool with_probabilities) {
  ojson r = {{"index", index},
             {"content", content},
             {"tokens", token_ids(m, lps)},
             {"id_slot", -1},
             {"stop", true},
             {"model", m.model},
             {"tokens_predicted", j.n_generated},
             {"tokens_evaluated", j.n_prompt},
             {"generation_settings", native_settings(j.params)},
             {"prompt", m.prompt_text},
             {"has_new_line", content.find('\n') != std::string::npos},
             {"truncated", false},
             {"stop_type", stop_type(j)},
             {"stopping_word", j.stop_string},
             {"tokens_cached", j.n_prompt + std::max(0, j.n_generated - 1)},  // the last token is not evaluated
             {"timings", timings(j)}};
  if (j.params.top_logprobs > 0 && with_probabilities) r["completion_probabilities"] = probabilities(lps, j.params.post_sampling_probs);
  return only_fields(r, m.response_fields);
}

std::string native_stream::push_event(const gen_event& e) {
  n_tokens_ += int(e.logprobs.size());
  if (e.text.empty() && e.logprobs.empty()) return {};
  ojson c = {{"index", 0},         {"content", e.text}, {"tokens", token_ids(m_, e.logprobs)}, {"stop", false}, {"id_slot", -1},
             {"tokens_predicted", n_tokens_}, {"tokens_evaluated", n_prompt_}};
  if (params_->top_logprobs > 0) c["completion_probabilities"] = probabilities(e.logprobs, params_->post_sampling_probs);
  return sse_data(ordered_json_text(c));
}

std::string native_stream::finish(const job& j) { return sse_data(ordered_json_text(native_result(m_, j, 0, "", {}, false))); }

std::string native_stream::error(const api_error& e) { return sse_data(e.to_json()); }

std::string native_stream::keep_alive() { return std::string(sse_keep_alive); }

}  // namespace glia::server
