// Fuzzes every step a model file goes through up to its first tokens: the GGUF header, metadata and
// tensor index (with tight read limits), a rewrite through the writer, --check-tensors, vocabulary
// loading, hyperparameter validation and weight binding, and, when the model is tiny, a prefill and
// one decode step on the reference backend. Each step must succeed or return a one-line error.
#include <cmath>
#include <cstring>
#include <span>

#include "backend/backend.h"
#include "fuzz_support.h"
#include "gguf/gguf.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/tensor_check.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace glia;
using fuzz::require;
using fuzz::require_one_line;

// Real vocabularies (32000 strings, 150000 for newer models) still parse; anything bigger is refused
// before it is allocated, which keeps a single input's memory in the tens of MB.
constexpr gguf::read_limits limits{.max_string_bytes = 1 << 16,
                                   .max_array_elems = 1 << 18,
                                   .max_array_depth = 4,
                                   .max_kv = 1 << 12,
                                   .max_tensors = 1 << 12};
// Work bounds so that one input stays in milliseconds (a real 10 MB model is parsed and bound, but
// not scanned or run).
constexpr uint64_t max_scan_bytes = 4u << 20;
constexpr size_t max_forward_weight_bytes = 2u << 20;
constexpr size_t max_kv_bytes = 16u << 20;
constexpr int fuzz_ctx = 4;

uint64_t tensor_bytes(const gguf::file& f) {
  uint64_t total = 0;
  for (const auto& t : f.tensors()) total += t.n_bytes;
  return total;
}

// Writing a file that parsed and parsing the result must give back the same metadata and tensors.
void check_rewrite(const gguf::file& f) {
  gguf::writer w;
  w.copy_metadata(f);
  status copied = w.copy_tensors(f);
  if (!copied) {
    require_one_line(copied.message());
    fuzz::fail("writer refuses tensors the reader accepted", copied.message());
  }
  auto bytes = w.to_bytes();
  if (!bytes) fuzz::fail("writer cannot serialize a file the reader accepted", bytes.message());
  auto g = gguf::file::from_memory(*bytes, limits);
  if (!g) fuzz::fail("reader refuses what the writer wrote", g.message());
  require((*g)->metadata().size() == f.metadata().size(), "rewrite changed the metadata count");
  require((*g)->tensors().size() == f.tensors().size(), "rewrite changed the tensor count");
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = (*g)->tensors()[i];
    require(a.name == b.name && a.type == b.type && a.n_dims == b.n_dims && a.n_bytes == b.n_bytes, "rewrite changed a tensor", a.name);
    require(std::memcmp(a.ne, b.ne, sizeof a.ne) == 0, "rewrite changed a tensor's dims", a.name);
    require(std::memcmp(a.data, b.data, size_t(a.n_bytes)) == 0, "rewrite changed a tensor's data", a.name);
  }
}

void check_tokenizer(const gguf::file& f) {
  auto tok = tokenizer::from_gguf(f);
  if (!tok) return require_one_line(tok.message());
  const auto ids = (*tok)->encode("Hello <s> world \xE2\x96\x81 \xC3\x84pfel\n", true, true);
  for (int32_t id : ids) require(id >= 0 && id < (*tok)->n_vocab(), "encode gave an id outside the vocabulary");
  (void)(*tok)->decode(ids, {.special = true});
}

void run_tiny_forward(const model& m, size_t input_size) {
  const family_profile& p = m.profile;
  if (m.decode_weight_bytes() > max_forward_weight_bytes) return;
  auto be = make_ref_backend();
  if (kv_cache::bytes_needed(p, fuzz_ctx, 2, dtype::f32, be->kv_layout()) > max_kv_bytes) return;
  auto cache = kv_cache::create(p, fuzz_ctx, 2, dtype::f32, *be);
  if (!cache) return require_one_line(cache.message());
  forward_pass fwd(m, *be);
  const int32_t last = int32_t(std::min<int64_t>(p.n_vocab - 1, INT32_MAX));
  const int32_t prompt[3] = {0, last, int32_t(input_size % uint64_t(p.n_vocab))};
  std::vector<float> logits;
  status s = fwd.run(*cache, prompt, 0, true, logits);  // two chunks of n_ubatch 2
  if (!s) return require_one_line(s.message());
  require(logits.size() == size_t(3 * p.n_vocab), "prefill logits have the wrong size");
  for (float x : logits) require(std::isfinite(x), "run() succeeded with a non-finite logit");
  const int32_t next[1] = {last};
  s = fwd.run(*cache, next, 3, false, logits);
  if (!s) return require_one_line(s.message());
  s = fwd.run(*cache, next, 4, false, logits);  // one past the context
  require(!s, "a token past the context was accepted");
  require_one_line(s.message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = gguf::file::from_memory(std::span<const uint8_t>(data, size), limits);
  if (!parsed) {
    require_one_line(parsed.message());
    return 0;
  }
  std::shared_ptr<gguf::file> f = std::move(*parsed);
  const bool small = tensor_bytes(*f) <= max_scan_bytes;
  if (small) {
    check_rewrite(*f);
    status s = check_tensors(*f);
    if (!s) require_one_line(s.message());
  }
  check_tokenizer(*f);
  auto m = load_model(f);
  if (!m) {
    require_one_line(m.message());
    return 0;
  }
  if (small) run_tiny_forward(**m, size);
  return 0;
}
