#include "glia/session.h"

#include <algorithm>
#include <chrono>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "runtime/profiler.h"
#include "runtime/tensor_dump.h"
#include "tokenizer/tokenizer.h"

namespace glia {

struct session::impl {
  std::shared_ptr<const model> m;
  std::unique_ptr<tokenizer> tok;
  std::unique_ptr<backend> be;
  std::unique_ptr<kv_cache> cache;
  std::unique_ptr<forward_pass> fwd;
  int32_t n_past = 0;
  std::unique_ptr<profiler> prof;
  std::unique_ptr<tensor_dumper> dumper;

  status eval(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& logits, profiler::phase ph) {
    if (prof) prof->begin_forward(ph, int64_t(tokens.size()));
    status s = fwd->run(*cache, tokens, n_past, all_logits, logits);
    if (prof) prof->end_forward();
    if (s) n_past += int32_t(tokens.size());
    return s;
  }
};

session::session(std::unique_ptr<impl> p) : p_(std::move(p)) {}
session::~session() = default;

result<std::unique_ptr<session>> session::create(const session_options& opts) {
  auto p = std::make_unique<impl>();
  load_options lo;
  lo.use_mmap = opts.use_mmap;
  auto m = load_model(opts.model_path, lo);
  if (!m) return m.take_error();
  p->m = std::move(*m);
  auto tok = tokenizer::from_gguf(*p->m->file);
  if (!tok) return make_error("{}: {}", opts.model_path, tok.message());
  p->tok = std::move(*tok);

  if (opts.backend == "cpu") p->be = make_cpu_backend(opts.n_threads);
  else if (opts.backend == "ref") p->be = make_ref_backend();
  else return make_error("unknown backend '{}' (cpu, ref)", opts.backend);

  dtype kv_type;
  if (opts.kv_type == "f16") kv_type = dtype::f16;
  else if (opts.kv_type == "f32") kv_type = dtype::f32;
  else return make_error("KV cache type '{}' is not supported (f16, f32)", opts.kv_type);
  const int n_ctx = opts.n_ctx > 0 ? opts.n_ctx : std::min(p->m->profile.n_ctx_train, 4096);
  auto cache = kv_cache::create(p->m->profile, n_ctx, std::max(1, opts.n_ubatch), kv_type);
  if (!cache) return cache.take_error();
  p->cache = std::make_unique<kv_cache>(std::move(*cache));
  p->fwd = std::make_unique<forward_pass>(*p->m, *p->be);
  return std::unique_ptr<session>(new session(std::move(p)));
}

int session::n_vocab() const { return int(p_->m->profile.n_vocab); }
int session::n_ctx() const { return p_->cache->n_ctx(); }
int32_t session::n_past() const { return p_->n_past; }
std::string session::architecture() const { return p_->m->profile.arch; }

result<std::vector<int32_t>> session::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  return p_->tok->encode(text, add_special, parse_special);
}

std::string session::detokenize(std::span<const int32_t> ids) const { return p_->tok->decode(ids); }

bool session::is_end_of_generation(int32_t id) const { return p_->tok->is_eog(id); }

status session::eval(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& logits) {
  return p_->eval(tokens, all_logits, logits, tokens.size() == 1 ? profiler::phase::decode : profiler::phase::prefill);
}

void session::enable_profiling() {
  p_->prof = std::make_unique<profiler>();
  p_->fwd->set_op_hook(p_->prof->hook());
}
std::string session::profile_table() const { return p_->prof ? p_->prof->table() : std::string(); }
std::string session::profile_json() const { return p_->prof ? p_->prof->json() : std::string("{}"); }
std::string session::profile_trace() const { return p_->prof ? p_->prof->chrome_trace() : std::string("{\"traceEvents\": []}"); }

void session::enable_tensor_dump(const std::string& pattern, const std::string& dir, int n_positions) {
  p_->dumper = std::make_unique<tensor_dumper>(pattern, dir, n_positions);
  p_->fwd->set_tap(p_->dumper->tap());
}

result<std::string> session::finish_tensor_dump() {
  if (!p_->dumper) return make_error("no tensor dump was requested");
  return p_->dumper->finish();
}

void session::reset() {
  p_->cache->clear();
  p_->n_past = 0;
}

status session::generate(std::span<const int32_t> prompt, int n_predict, sampler& smp,
                         const std::function<bool(std::string_view)>& on_text, generation_stats* stats) {
  using clock = std::chrono::steady_clock;
  generation_stats st;
  std::vector<float> logits;
  auto t0 = clock::now();
  GLIA_TRY(p_->eval(prompt, false, logits, profiler::phase::prefill));
  st.n_prompt = int(prompt.size());
  st.prompt_seconds = std::chrono::duration<double>(clock::now() - t0).count();

  stream_decoder dec(*p_->tok);
  auto t1 = clock::now();
  status result;
  for (int i = 0; i < n_predict; ++i) {
    const int32_t id = smp.sample(logits);
    if (p_->tok->is_eog(id)) {
      st.stopped_by_eog = true;
      break;
    }
    ++st.n_generated;
    const std::string text = dec.push(id);
    if (!text.empty() && !on_text(text)) break;
    if (i + 1 == n_predict) break;
    const int32_t next[1] = {id};
    result = p_->eval(next, false, logits, profiler::phase::decode);
    if (!result) break;
  }
  const std::string tail = dec.flush();
  if (!tail.empty()) on_text(tail);
  st.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  if (stats) *stats = st;
  return result;
}

}  // namespace glia
