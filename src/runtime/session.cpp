#include "glia/session.h"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <mutex>
#include <cmath>
#include <thread>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/ranges.h>
#include <utility>

#include "backend/backend.h"
#include "core/unit_length.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/tensor_check.h"
#include "runtime/builtin_templates.h"
#include "runtime/draft.h"
#include "runtime/profiler.h"
#include "runtime/stop_filter.h"
#include "model/hf/hf_tensor_names.h"
#include "tokenizer/jinja/chat_template.h"
#include "runtime/tensor_dump.h"
#include "runtime/text_stream_impl.h"
#include "tokenizer/tokenizer.h"

namespace glia {

namespace {

// Sliding-window rings of one size for every -b up to the default (kv_cache::ring_batch_floor).
constexpr int k_min_ring_batch = kv_cache::ring_batch_floor;

}  // namespace

struct session::impl {
  std::shared_ptr<const model> m;
  std::unique_ptr<tokenizer> tok;
  // The model's chat templates and special-token texts, read once (not per rendered request).
  result<jinja::chat_template_set> templates = jinja::chat_template_set{};
  std::unique_ptr<backend> be;
  std::unique_ptr<kv_cache> cache;
  std::unique_ptr<forward_pass> fwd;
  int32_t n_past = 0;
  std::vector<int32_t> history;
  std::unique_ptr<profiler> prof;
  std::unique_ptr<tensor_dumper> dumper;
  // Sequences 1..n-1 (set_sequence_count); sequence 0 is cache/n_past/history above.
  struct sequence {
    std::unique_ptr<kv_cache> cache;
    int32_t n_past = 0;
    std::vector<int32_t> history;
  };
  std::vector<sequence> extra;
  dtype kv_type = dtype::f16;
  int n_ubatch = 512;
  // The vocabulary as grammars see it: built at the first constrained request, then shared.
  mutable std::once_flag grammar_vocab_once;
  mutable std::shared_ptr<const grammar::token_vocab> grammar_vocab;

  kv_cache& cache_of(int seq) { return seq == 0 ? *cache : *extra[size_t(seq - 1)].cache; }
  int32_t& n_past_of(int seq) { return seq == 0 ? n_past : extra[size_t(seq - 1)].n_past; }
  std::vector<int32_t>& history_of(int seq) { return seq == 0 ? history : extra[size_t(seq - 1)].history; }

  status eval(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& logits, profiler::phase ph) {
    if (prof) prof->begin_forward(ph, int64_t(tokens.size()));
    status s = fwd->run(*cache, tokens, n_past, all_logits, logits);
    if (prof) prof->end_forward(s.is_ok());
    if (s) {
      n_past += int32_t(tokens.size());
      history.insert(history.end(), tokens.begin(), tokens.end());
    }
    return s;
  }
};

session::session(std::unique_ptr<impl> p) : p_(std::move(p)) {}
session::~session() = default;

result<std::unique_ptr<session>> session::create(const session_options& opts) {
  auto p = std::make_unique<impl>();
  load_options lo;
  lo.use_mmap = opts.use_mmap;
  if (opts.load_progress)
    lo.progress = [&opts](uint64_t done, uint64_t total) { opts.load_progress(total ? double(done) / double(total) : 1.0); };
  auto m = load_model(opts.model_path, lo);
  if (!m) return m.take_error();
  p->m = std::move(*m);
  if (opts.check_tensors) {
    status c = check_tensors(*p->m->file, opts.n_threads > 0 ? opts.n_threads : int(std::thread::hardware_concurrency()));
    if (!c) return make_error("{}: {}{}", opts.model_path, c.message(), hf::in_checkpoint_terms(c.message(), *p->m->file));
  }
  auto tok = tokenizer::from_gguf(*p->m->file);
  if (!tok) return make_error("{}: {}", opts.model_path, tok.message());
  p->tok = std::move(*tok);
  p->templates = jinja::load_chat_templates(*p->m->file);

  auto be = make_backend(opts.backend, opts.n_threads, opts.repack_weights, opts.cpu_isa);
  if (!be) return be.take_error();
  p->be = std::move(*be);

  dtype kv_type;
  if (opts.kv_type == "f16") kv_type = dtype::f16;
  else if (opts.kv_type == "f32") kv_type = dtype::f32;
  else return make_error("KV cache type '{}' is not supported (f16, f32)", opts.kv_type);
  const int n_ctx = opts.n_ctx > 0 ? opts.n_ctx : std::min(p->m->profile.n_ctx_train, 4096);
  // Every sequence has a cache of its own, all checked before the first is made: a server started with
  // more slots than fit would otherwise run until its slots fill and then be killed.
  if (opts.n_sequences < 1) return make_error("sequence count {} must be at least 1", opts.n_sequences);
  const size_t kv_bytes = kv_cache::bytes_needed(p->m->profile, n_ctx, std::max(1, opts.n_ubatch), kv_type, p->be->kv_layout(),
                                                 k_min_ring_batch);
  if (auto avail = p->be->available_memory(); avail && double(kv_bytes) * opts.n_sequences > double(*avail)) {
    const double need = double(kv_bytes) * opts.n_sequences / (1 << 20), have = double(*avail) / (1 << 20);
    if (opts.n_sequences == 1)
      return make_error("the KV cache for a context of {} tokens needs {:.1f} MiB, but only {:.1f} MiB of memory is available; use a smaller -c",
                        n_ctx, need, have);
    return make_error("the KV caches of {} sequences (parallel slots) with a context of {} tokens each need {:.1f} MiB, but only {:.1f} MiB "
                      "of memory is available; use a smaller -c or fewer slots",
                      opts.n_sequences, n_ctx, need, have);
  }
  auto cache = kv_cache::create(p->m->profile, n_ctx, std::max(1, opts.n_ubatch), kv_type, *p->be, k_min_ring_batch);
  if (!cache) return cache.take_error();
  p->cache = std::make_unique<kv_cache>(std::move(*cache));
  p->kv_type = kv_type;
  p->n_ubatch = std::max(1, opts.n_ubatch);
  p->fwd = std::make_unique<forward_pass>(*p->m, *p->be);
  std::unique_ptr<session> s(new session(std::move(p)));
  GLIA_TRY(s->set_sequence_count(opts.n_sequences));
  return s;
}

int session::n_vocab() const { return int(p_->m->profile.n_vocab); }
int session::n_ctx() const { return p_->cache->n_ctx(); }
int session::n_ctx_train() const { return p_->m->profile.n_ctx_train; }

std::string session::context_warning() const {
  if (n_ctx_train() <= 0 || n_ctx() <= n_ctx_train()) return {};
  return fmt::format("a context of {} tokens is longer than the {} the model was trained with; text past that may degrade",
                     n_ctx(), n_ctx_train());
}
int32_t session::n_past() const { return p_->n_past; }
std::string session::architecture() const { return p_->m->profile.arch; }
uint64_t session::model_file_bytes() const { return p_->m->file->size(); }
bool session::model_is_mapped() const { return p_->m->file->is_mapped(); }
uint64_t session::prepared_weight_bytes() const { return p_->fwd->prepared_bytes(); }
double session::prepare_seconds() const { return p_->fwd->prepare_seconds(); }

// Parses `f.source` into `f`: once, when the template is chosen, not on every request that uses it.
static status compile_into(session::chat_format& f, const jinja::special_tokens& tokens) {
  auto compiled = jinja::compiled_template::compile(f.source);
  if (!compiled) return compiled.take_error();
  f.compiled = std::make_shared<const jinja::compiled_template>(std::move(*compiled));
  f.system_role = jinja::shows_system_role(*f.compiled, tokens);
  f.alternating_roles = jinja::requires_alternating_roles(*f.compiled, tokens);
  return {};
}

result<session::chat_format> session::chat_template(const std::string& spec, bool with_tools) const {
  chat_format f;
  const jinja::special_tokens tokens = p_->templates ? p_->templates->tokens : jinja::special_tokens{};
  if (spec.empty()) {
    // The model's own template, or ChatML with a warning when it has none or one that does not
    // parse (as llama.cpp does).
    std::string note = "the model has no chat template; using ChatML";
    const auto& set = p_->templates;
    if (!set) note = fmt::format("the model's chat template cannot be read ({}); using ChatML", set.message());
    const std::string* t = set ? set->select({}, with_tools) : nullptr;
    if (t && !t->empty()) {
      f.source = *t;
      status parsed = compile_into(f, tokens);
      if (parsed) return f;
      note = fmt::format("the model's chat template does not parse ({}); using ChatML (give one with --chat-template)",
                         parsed.message());
    }
    const builtin_template* b = find_builtin_template("chatml");
    f.source = b->source;
    f.end_of_turn = b->end_of_turn;
    f.fell_back = true;
    f.fallback_note = note;
    GLIA_TRY(compile_into(f, tokens));
    return f;
  }
  if (const builtin_template* b = find_builtin_template(spec)) {
    f.source = b->source;
    f.end_of_turn = b->end_of_turn;
    GLIA_TRY(compile_into(f, tokens));
    return f;
  }
  std::error_code ec;
  std::ifstream in(spec, std::ios::binary);
  if (std::filesystem::is_directory(spec, ec) || !in)  // (a pipe, <(...), is fine)
    return make_error("--chat-template '{}' is neither a built-in ({}) nor a readable file", spec,
                      fmt::join(builtin_template_names(), ", "));
  f.source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error("--chat-template '{}': cannot read the file", spec);
  if (status parsed = compile_into(f, tokens); !parsed) return make_error("--chat-template '{}': {}", spec, parsed.message());
  return f;
}

result<std::string> session::render_chat(const chat_format& f, const std::string& messages_json, bool add_generation_prompt,
                                         const std::string& extra_vars_json) const {
  // A model whose template metadata cannot be read was given ChatML by chat_template(), with a note;
  // it renders without the model's special-token texts rather than failing every request.
  const auto& set = p_->templates;
  jinja::chat_inputs in;
  in.messages = jinja::json::parse(messages_json, nullptr, false);
  if (in.messages.is_discarded() || !in.messages.is_array()) return make_error("messages must be a JSON array");
  if (!f.system_role) in.messages = jinja::system_text_to_user(std::move(in.messages));
  if (f.alternating_roles) in.messages = jinja::join_consecutive_turns(std::move(in.messages));
  in.add_generation_prompt = add_generation_prompt;
  if (set) in.tokens = set->tokens;
  in.extra = jinja::json::parse(extra_vars_json, nullptr, false);
  if (in.extra.is_discarded() || !in.extra.is_object()) return make_error("extra template variables must be a JSON object");
  return f.compiled ? jinja::render_chat(*f.compiled, in) : jinja::render_chat(f.source, in);
}

std::optional<double> session::metadata_number(std::string_view key) const { return p_->m->file->get_float(key); }
std::optional<std::string> session::metadata_string(std::string_view key) const { return p_->m->file->get_string(key); }
std::string session::token_text(int32_t id) const { return p_->tok->token_to_piece(id, true); }

result<std::vector<int32_t>> session::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  return p_->tok->encode(text, add_special, parse_special);
}

result<std::vector<int32_t>> session::tokenize_chat(std::string_view rendered) const {
  std::vector<int32_t> ids = p_->tok->encode(rendered, false, true);
  if (const auto bos = added_bos(); bos && (ids.empty() || ids.front() != *bos)) ids.insert(ids.begin(), *bos);
  return ids;
}

std::string session::detokenize(std::span<const int32_t> ids, bool special) const {
  return p_->tok->decode(ids, {.special = special});
}

bool session::is_end_of_generation(int32_t id) const { return p_->tok->is_eog(id); }
std::shared_ptr<const grammar::token_vocab> session::grammar_vocab() const {
  std::call_once(p_->grammar_vocab_once, [this] {
    const tokenizer& t = *p_->tok;
    std::vector<std::string> pieces(size_t(t.n_vocab()));
    for (int32_t id = 0; id < t.n_vocab(); ++id) pieces[size_t(id)] = t.token_to_piece(id, false);
    // EOS first: the token a sampler returns when the grammar cannot go on.
    std::vector<int32_t> eog;
    if (t.is_eog(t.eos())) eog.push_back(t.eos());
    for (int32_t id : t.vocab().eog_ids)
      if (id != t.eos()) eog.push_back(id);
    p_->grammar_vocab = std::make_shared<const grammar::token_vocab>(pieces, std::move(eog));
  });
  return p_->grammar_vocab;
}

void session::forbid_end_of_generation(sampler_params& p) const {
  for (int32_t id : p_->tok->vocab().eog_ids) p.logit_bias[id] = -INFINITY;
}
std::optional<int32_t> session::added_bos() const {
  if (!p_->tok->add_bos() || p_->tok->bos() < 0) return std::nullopt;
  return p_->tok->bos();
}

int32_t session::bos_token() const { return p_->tok->bos(); }
int32_t session::eos_token() const { return p_->tok->eos(); }
session::fim_tokens session::fim() const {
  const auto& v = p_->tok->vocab();
  return {v.fim_pre, v.fim_suf, v.fim_mid, v.fim_rep, v.fim_sep};
}

std::unique_ptr<text_stream> session::make_text_stream(bool raw, const std::vector<std::string>& shown_control) const {
  auto impl = std::make_unique<text_stream::impl>(*p_->tok, raw);
  std::vector<int32_t> ids;
  for (const std::string& t : shown_control)
    if (const int32_t id = p_->tok->vocab().find(t); id >= 0 && p_->tok->is_control(id)) ids.push_back(id);
  impl->dec.show_control(std::move(ids));
  return std::unique_ptr<text_stream>(new text_stream(std::move(impl)));
}

status session::eval(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& logits) {
  return p_->eval(tokens, all_logits, logits, tokens.size() == 1 ? profiler::phase::decode : profiler::phase::prefill);
}

void session::enable_profiling() {
  p_->prof = std::make_unique<profiler>();
  // A device backend runs ops asynchronously: each op is timed from the end of the previous one.
  p_->fwd->set_op_hook([be = p_->be.get(), hook = p_->prof->hook()](const char* op, bool begin) {
    be->synchronize();
    hook(op, begin);
  });
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
  p_->history.clear();
}

const std::vector<int32_t>& session::history() const { return p_->history; }

status session::set_sequence_count(int n) {
  if (n < 1) return make_error("sequence count {} must be at least 1", n);
  while (int(p_->extra.size()) + 1 > n) p_->extra.pop_back();
  while (int(p_->extra.size()) + 1 < n) {
    auto c = kv_cache::create(p_->m->profile, p_->cache->n_ctx(), p_->n_ubatch, p_->kv_type, *p_->be, k_min_ring_batch);
    if (!c) return c.take_error();
    impl::sequence sq;
    sq.cache = std::make_unique<kv_cache>(std::move(*c));
    p_->extra.push_back(std::move(sq));
  }
  return {};
}

int session::sequence_count() const { return int(p_->extra.size()) + 1; }

const std::vector<int32_t>& session::sequence_history(int seq) const { return p_->history_of(seq); }

bool session::sequence_keep(int seq, int n) {
  auto& h = p_->history_of(seq);
  if (n >= int(h.size())) return true;
  if (n > 0 && p_->cache_of(seq).truncate(int32_t(n))) {
    h.resize(size_t(n));
    p_->n_past_of(seq) = int32_t(n);
    return true;
  }
  p_->cache_of(seq).clear();
  h.clear();
  p_->n_past_of(seq) = 0;
  return n == 0;
}

status session::eval_batch(std::span<const batch_item> items, std::vector<float>& logits) {
  std::vector<sequence_batch> segs;
  std::vector<bool> seen(size_t(sequence_count()), false);
  for (const auto& it : items) {
    if (it.seq < 0 || it.seq >= sequence_count()) return make_error("sequence {} does not exist ({} sequences)", it.seq, sequence_count());
    if (seen[size_t(it.seq)]) return make_error("sequence {} appears twice in one batch", it.seq);
    seen[size_t(it.seq)] = true;
    segs.push_back(sequence_batch{&p_->cache_of(it.seq), it.tokens, p_->n_past_of(it.seq), it.all_logits});
  }
  if (p_->prof) {
    size_t n = 0;
    for (const auto& it : items) n += it.tokens.size();
    p_->prof->begin_forward(n == items.size() ? profiler::phase::decode : profiler::phase::prefill, int64_t(n));
  }
  status s = p_->fwd->run_batch(segs, logits);
  if (p_->prof) p_->prof->end_forward(s.is_ok());
  if (!s) return s;
  for (const auto& it : items) {
    p_->n_past_of(it.seq) += int32_t(it.tokens.size());
    auto& h = p_->history_of(it.seq);
    h.insert(h.end(), it.tokens.begin(), it.tokens.end());
  }
  return {};
}

session::pooling session::embedding_pooling() const {
  const auto v = metadata_number(architecture() + ".pooling_type");
  if (v && *v == 1) return pooling::mean;
  if (v && *v == 2) return pooling::first;
  return pooling::last;
}

int session::n_embd() const { return p_->m->profile.n_embd; }

std::optional<session::pooling> session::pooling_named(std::string_view name) {
  if (name == "mean") return pooling::mean;
  if (name == "cls") return pooling::first;
  if (name == "last") return pooling::last;
  return std::nullopt;
}

result<std::vector<float>> session::embed(std::span<const int32_t> tokens, pooling how, bool normalize) {
  if (tokens.empty()) return make_error("nothing to embed (no tokens)");
  if (int64_t(tokens.size()) > n_ctx()) return make_error("the input has {} tokens, but the context holds {}", tokens.size(), n_ctx());
  // A cache just long enough: the sequences' caches hold other requests' contexts.
  auto cache = kv_cache::create(p_->m->profile, int(tokens.size()), p_->n_ubatch, p_->kv_type, *p_->be, k_min_ring_batch);
  if (!cache) return cache.take_error();
  std::vector<float> hidden;
  GLIA_TRY(p_->fwd->run_hidden(*cache, tokens, 0, hidden));
  const size_t d = size_t(n_embd()), n = tokens.size();
  std::vector<float> out(d, 0.0f);
  if (how == pooling::mean) {
    std::vector<double> sum(d, 0.0);
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < d; ++i) sum[i] += hidden[t * d + i];
    for (size_t i = 0; i < d; ++i) out[i] = float(sum[i] / double(n));
  } else {
    const size_t t = how == pooling::first ? 0 : n - 1;
    std::copy_n(hidden.begin() + std::ptrdiff_t(t * d), d, out.begin());
  }
  if (normalize) scale_to_unit_length(out);
  return out;
}

status session::eval_reusing(std::span<const int32_t> tokens, std::vector<float>& logits, int* n_reused) {
  if (tokens.empty()) return make_error("empty prompt");
  if (int64_t(tokens.size()) > n_ctx())
    return make_error("the prompt needs {} tokens, but the context holds {}", tokens.size(), n_ctx());
  size_t common = 0;
  while (common < tokens.size() && common < p_->history.size() && tokens[common] == p_->history[common]) ++common;
  // The last token is always evaluated, since its logits are what the caller wants.
  if (common == tokens.size()) --common;
  if (common < p_->history.size()) {
    if (p_->cache->truncate(int32_t(common))) {
      p_->history.resize(common);
      p_->n_past = int32_t(common);
    } else {
      reset();
      common = 0;
    }
  }
  if (n_reused) *n_reused = int(common);
  return p_->eval(tokens.subspan(common), false, logits, profiler::phase::prefill);
}


status session::check_draft(const session& draft) const {
  if (&draft == this) return make_error("a session cannot be its own draft model (load the model twice)");
  const tokenizer &t = *p_->tok, &d = *draft.p_->tok;
  if (std::abs(t.n_vocab() - d.n_vocab()) > 128)
    return make_error("the draft model's vocabulary has {} tokens and this model's {}: more than 128 apart, so not the same "
                      "vocabulary", d.n_vocab(), t.n_vocab());
  if (t.bos() != d.bos() || t.eos() != d.eos() || t.add_bos() != d.add_bos())
    return make_error("the draft model's BOS/EOS tokens ({}/{}, BOS {}) differ from this model's ({}/{}, BOS {})", d.bos(), d.eos(),
                      d.add_bos() ? "added" : "not added", t.bos(), t.eos(), t.add_bos() ? "added" : "not added");
  for (int32_t id = 0; id < std::min(t.n_vocab(), d.n_vocab()); ++id)
    if (t.token_text(id) != d.token_text(id))
      return make_error("token {} is '{}' in the draft model's vocabulary but '{}' in this model's", id, d.token_text(id), t.token_text(id));
  return {};
}

status session::generate(std::span<const int32_t> prompt, const generate_options& opts, sampler& smp,
                         const std::function<bool(std::string_view)>& on_text, generation_stats* stats) {
  if (opts.draft == this) {
    if (stats) *stats = {};
    return make_error("a session cannot be its own draft model (load the model twice)");
  }
  using clock = std::chrono::steady_clock;
  generation_stats st;
  std::vector<float> logits;
  auto t0 = clock::now();
  GLIA_TRY(eval_reusing(prompt, logits, &st.n_reused));
  st.n_prompt = int(prompt.size());
  st.prompt_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  smp.reset();
  for (int32_t id : prompt) smp.accept_prompt(id);

  // With a grammar the text is the pieces the grammar checked, without a tokenizer's clean-up.
  stream_decoder dec(*p_->tok, false, false, smp.constrained());
  stop_filter stops(opts.stop);
  auto t1 = clock::now();
  status result;
  bool open = true;  // false once the callback asked to stop
  auto emit = [&](const std::string& text) {
    if (open && !text.empty() && !on_text(text)) open = false;
  };
  // With a draft model the cache runs ahead: after evaluating [token, drafts...], rows[r] holds the
  // logits after drafts[r - 1] (rows[0] after the token), and drafts[row..] are not yet confirmed.
  const int64_t nv = p_->m->profile.n_vocab;
  std::vector<int32_t> drafts;
  size_t row = 0;
  std::span<const float> cur(logits);
  auto unconfirmed = [&] { return int32_t(drafts.size() - row); };
  auto drop_unconfirmed = [&] {
    const int32_t n = unconfirmed();
    if (n == 0) return true;
    if (!sequence_keep(0, p_->n_past - n)) return false;
    if (p_->prof) p_->prof->discard_decoded(n);
    return true;
  };
  int idle_steps = 0, rest = 1;  // the draft's rest after proposing nothing (see below)
  for (int i = 0;; ++i) {
    if (opts.n_predict >= 0 && i >= opts.n_predict) {
      st.reason = stop_reason::length;
      break;
    }
    if (opts.cancel && opts.cancel->load()) {
      st.reason = stop_reason::cancelled;
      break;
    }
    const int32_t id = smp.sample(cur);
    if (id < 0 || p_->tok->is_eog(id)) {  // < 0: a grammar with no way on and no end token
      st.reason = smp.grammar_dead_end() ? stop_reason::grammar_dead_end : stop_reason::end_of_generation;
      break;
    }
    smp.accept(id);
    ++st.n_generated;
    bool hit = false;
    emit(stops.push(dec.push(id), hit));
    if (hit) {
      st.reason = stop_reason::stop_string;
      break;
    }
    if (!open) {
      st.reason = stop_reason::callback;
      break;
    }
    if (opts.n_predict >= 0 && i + 1 >= opts.n_predict) {
      st.reason = stop_reason::length;
      break;
    }
    if (p_->n_past - unconfirmed() >= n_ctx()) {
      st.reason = stop_reason::context_full;
      break;
    }
    if (row < drafts.size() && id == drafts[row]) {  // already evaluated: its logits are the next row
      ++row;
      ++st.n_accepted;
      cur = std::span<const float>(logits).subspan(size_t(row) * size_t(nv), size_t(nv));
      continue;
    }
    // Within one ubatch of the end, so a sliding-window ring still holds what the kept tokens need.
    if (!drop_unconfirmed()) {
      result = make_error("the KV cache could not drop {} unconfirmed draft tokens", unconfirmed());
      break;
    }
    drafts.clear();
    row = 0;
    if (opts.draft && opts.n_draft > 0) {
      // The batch [id, drafts...] must fit the context and one ubatch (so that a sliding-window ring
      // still holds what the kept tokens need after dropping the rest).
      int64_t room = std::min<int64_t>({opts.n_draft, int64_t(n_ctx()) - p_->n_past - 1, int64_t(p_->n_ubatch) - 1});
      if (opts.n_predict >= 0) room = std::min<int64_t>(room, opts.n_predict - i - 2);
      if (room < std::max(1, opts.n_draft_min)) {
        // No room for a proposal worth checking: the draft is not asked (nor rested).
      } else if (idle_steps > 0) {
        --idle_steps;
      } else {
        std::vector<int32_t> context = p_->history;
        context.push_back(id);
        const auto t_draft = clock::now();
        auto proposed = propose_draft(*opts.draft, context, int(room), opts.draft_p_min, int(nv), smp.grammar_matcher());
        if (p_->prof) p_->prof->add_draft_time(std::chrono::duration<double, std::milli>(clock::now() - t_draft).count());
        if (!proposed) {
          result = make_error("draft model: {}", proposed.message());
          break;
        }
        drafts = std::move(*proposed);
        // A draft that proposes nothing still reads every token: it rests for 1, 2, 4 ... 16 steps
        // (and catches up in one pass when it resumes) until it proposes again. One that proposes
        // fewer than n_draft_min tokens is not checked and asked again next step (as llama.cpp).
        idle_steps = drafts.empty() ? rest : 0;
        rest = drafts.empty() ? std::min(rest * 2, 16) : 1;
        if (int(drafts.size()) < opts.n_draft_min) drafts.clear();
        st.n_drafted += int(drafts.size());
      }
    }
    std::vector<int32_t> batch{id};
    batch.insert(batch.end(), drafts.begin(), drafts.end());
    result = p_->eval(batch, !drafts.empty(), logits, profiler::phase::decode);
    if (!result) {
      drafts.clear();  // never entered the context: nothing to drop
      break;
    }
    cur = std::span<const float>(logits).first(size_t(nv));
  }
  // Drafts proposed but not confirmed leave the context, as if they had never been evaluated.
  if (const int32_t n = unconfirmed(); !drop_unconfirmed() && result)
    result = make_error("the KV cache could not drop {} unconfirmed draft tokens", n);
  if (st.reason != stop_reason::stop_string) {
    bool hit = false;
    std::string tail = stops.push(dec.flush(), hit);
    if (!hit) tail += stops.flush();
    emit(tail);
  }
  st.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  if (stats) *stats = st;
  return result;
}

}  // namespace glia
