// llama-server's own endpoints, for the clients written against it: POST /completion (and
// /completions), POST /infill (code completion: llama.vscode, llama.vim), GET /props and POST
// /apply-template. Generation goes through the same engine as /v1/completions; the answers are in
// llama-server's shapes (server/native_responses.h).
#include <fmt/core.h>

#include "core/json_text.h"
#include "server/generation_setup.h"
#include "server/infill_prompt.h"
#include "server/native_request.h"
#include "server/native_responses.h"
#include "server/sse_job_stream.h"

namespace glia::server {
namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// Waits for every job, then answers with their results (one object for one prompt, a list for
// several, as llama-server does); a client that leaves cancels them.
void respond_native(const std::vector<std::shared_ptr<job>>& jobs, const std::vector<native_meta>& metas, httplib::Response& res) {
  ojson results = ojson::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    job& j = *jobs[i];
    std::string text;
    std::vector<token_logprob> lps;
    if (auto e = wait_for_events(j, jobs, text, lps)) return send_error(res, *e);
    results.push_back(native_result(metas[i], j, int(i), text, lps));
  }
  res.set_content(ordered_json_text(results.size() == 1 ? results[0] : results), "application/json");
}

void native_generate(server_state& st, bool infill, const httplib::Request& req, httplib::Response& res) {
  st.stats.requests_completion++;
  if (auto e = refuse_unready(st, res)) return send_error(res, *e);
  const session& s = st.sess();
  native_request n;
  std::vector<std::vector<int32_t>> prompts;
  if (infill) {
    auto parsed = parse_infill_request(req.body, st.sampling_defaults);
    if (!parsed.ok()) return send_error(res, parsed.error());
    n = std::move(parsed.value().first);
    // llama-server's -b (2048 by default) sizes the prefix and suffix windows.
    auto p = infill_prompt(s, parsed.value().second, std::max(2048, st.opts.session.n_ubatch), n.r.params.max_tokens);
    if (!p.ok()) return send_error(res, p.error());
    if (auto e = check_logit_bias(s, n.r.params.sampling)) return send_error(res, *e);
    if (!fits_context(s, p.value().size(), false))
      return send_error(res, bad_request(fmt::format("the infill prompt has {} tokens, but the context holds {}", p.value().size(), s.n_ctx()),
                                         "input_prefix"));
    if (n.r.params.ignore_eos) s.forbid_end_of_generation(n.r.params.sampling);
    prompts.push_back(std::move(p.value()));
  } else {
    auto parsed = parse_native_request(req.body, st.sampling_defaults);
    if (!parsed.ok()) return send_error(res, parsed.error());
    n = std::move(parsed.value());
    if (!n.mixed.empty()) {
      n.r.prompts.clear();
      for (const auto& parts : n.mixed) n.r.prompts.push_back({{}, tokenize_mixed(s, parts), true});
    }
    reply_reading reading;
    auto built = build_prompts(st, n.r, reading);
    if (!built.ok()) return send_error(res, built.error());
    prompts = std::move(built.value());
  }
  auto guard = std::make_unique<in_flight_guard>(st);
  auto queued = queue_jobs(st, n.r, prompts, req, res);
  if (!queued.ok()) return send_error(res, queued.error());
  const std::vector<std::shared_ptr<job>>& jobs = queued.value();
  std::vector<native_meta> metas;
  for (const auto& j : jobs)
    metas.push_back({n.r.model.empty() ? st.model_name : n.r.model, s.detokenize(j->prompt, true), n.return_tokens, n.response_fields});
  if (n.r.params.stream) return stream_job(req, res, native_stream(std::move(metas.front())), jobs.front(), std::move(guard));
  respond_native(jobs, metas, res);
}

// llama-server's /props: what its web UI and clients read to learn the context, the slots, the
// template and the defaults.
void native_props(server_state& st, httplib::Response& res) {
  const session& s = st.sess();
  generation_params defaults;
  defaults.sampling = st.sampling_defaults;
  defaults.sampling.seed = 0xFFFFFFFF;  // llama.cpp's "random": each request draws its own
  const auto text_of = [&s](int32_t id) { return id >= 0 ? s.token_text(id) : std::string(); };
  const ojson p = {{"default_generation_settings",
                    {{"id", 0},
                     {"id_task", -1},
                     {"n_ctx", s.n_ctx()},
                     {"speculative", false},
                     {"is_processing", false},
                     {"params", native_settings(defaults)}}},
                   {"total_slots", st.opts.parallel},
                   {"model_alias", st.model_name},
                   {"model_path", st.opts.session.model_path},
                   {"modalities", {{"vision", false}, {"audio", false}}},
                   {"chat_template", st.chat_fmt.format.source},
                   {"bos_token", text_of(s.bos_token())},
                   {"eos_token", text_of(s.eos_token())},
                   {"build_info", "glia"}};
  res.set_content(ordered_json_text(p), "application/json");
}

// llama-server's /apply-template: a chat request's prompt as the template renders it, nothing generated.
void apply_template(server_state& st, const httplib::Request& req, httplib::Response& res) {
  auto parsed = parse_chat_request(req.body, st.sampling_defaults);
  if (!parsed.ok()) return send_error(res, parsed.error());
  reply_reading reading;
  const served_template* used = nullptr;
  auto text = render_chat_prompt(st, parsed.value(), reading, used);
  if (!text.ok()) return send_error(res, text.error());
  res.set_content(json_text(json{{"prompt", text.value()}}), "application/json");
}

}  // namespace

void add_native_routes(httplib::Server& svr, server_state& st) {
  for (const char* path : {"/completion", "/completions"})
    add_route(svr, st, "POST", path, [&st](const httplib::Request& req, httplib::Response& res) { native_generate(st, false, req, res); });
  add_route(svr, st, "POST", "/infill", [&st](const httplib::Request& req, httplib::Response& res) { native_generate(st, true, req, res); });
  add_route(svr, st, "GET", "/props", [&st](const httplib::Request&, httplib::Response& res) {
    if (auto e = refuse_unready(st, res)) return send_error(res, *e);
    native_props(st, res);
  });
  add_route(svr, st, "POST", "/apply-template", [&st](const httplib::Request& req, httplib::Response& res) {
    if (auto e = refuse_unready(st, res)) return send_error(res, *e);
    apply_template(st, req, res);
  });
}

}  // namespace glia::server
