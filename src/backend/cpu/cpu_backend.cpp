// The multithreaded CPU backend. Each op computes the same function as the reference backend (the
// non-hot per-row formulas are the reference's own, from backend/ref/ref_ops.h); the hot loops come
// from the kernel table picked for the host CPU, and the work is split over a persistent pool.
//
// Not meant for concurrent calls from several threads: matmul's and attention's scratch are guarded, and
// the pool serializes jobs, but nothing more.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/ref/ref_ops.h"
#include "core/cpu_features.h"

namespace glia {
namespace cpu {
namespace {

class cpu_backend final : public backend {
 public:
  cpu_backend(int n_threads, const kernel_table& k, bool repack) : pool_(n_threads), k_(k), repack_(repack) {}

  std::string name() const override { return "cpu"; }
  std::string cpu_isa() const override { return k_.isa; }

  void get_rows(const weight_view& table, const int32_t* ids, int64_t n_ids, float* out) override {
    parallel_for(pool_, n_ids, table.n_in, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) ref::dequantize_row(table, ids[t], out + t * table.n_in);
    });
  }

  size_t prepare_weight(const weight_view& w) override {
    if (!repack_) return 0;
    std::lock_guard<std::mutex> lk(matmul_mutex_);
    if (const prepared_weight* p = find_prepared(w)) return p->bytes;
    auto p = std::make_unique<prepared_weight>();
    if (!cpu::prepare_weight(pool_, k_, w, *p, panel_arena_)) return 0;
    const size_t bytes = p->bytes;
    prepared_[w.data] = std::move(p);
    return bytes;
  }

  void matmul(const weight_view& w, const float* x, int64_t n_tok, float* y) override {
    std::lock_guard<std::mutex> lk(matmul_mutex_);
    cpu::matmul(pool_, k_, w, x, n_tok, y, matmul_, find_prepared(w));
  }

  void matmul_shared(std::span<const weight_view> ws, const float* x, int64_t n_tok,
                     std::span<float* const> ys) override {
    std::lock_guard<std::mutex> lk(matmul_mutex_);
    if (ws.size() > max_shared_matrices) {
      for (size_t i = 0; i < ws.size(); ++i) cpu::matmul(pool_, k_, ws[i], x, n_tok, ys[i], matmul_, find_prepared(ws[i]));
      return;
    }
    const prepared_weight* prepared[max_shared_matrices];
    cpu::matmul_shared(pool_, k_, ws, x, n_tok, ys, matmul_, find_prepared(ws, prepared));
  }

  void matmul_glu(const weight_view& gate, const weight_view& up, const float* x, int64_t n_tok, activation act,
                  float* out, float* up_out, std::span<const weight_view> then) override {
    const bool fused = [&] {
      std::lock_guard<std::mutex> lk(matmul_mutex_);
      return cpu::matmul_glu(pool_, k_, gate, up, x, n_tok, act, out, up_out, matmul_, find_prepared(gate),
                             find_prepared(up));
    }();
    if (!fused) {
      backend::matmul_glu(gate, up, x, n_tok, act, out, up_out, then);
      return;
    }
    prefetch_weights(then);
  }

  void prefetch_weights(std::span<const weight_view> next) override {
    // Half of a 1 MiB L2 (Skylake-SP and later; Zen 3 has 512 KiB): warmed lines must survive the
    // ops in between.
    constexpr size_t warm_budget = 256 << 10;
    if (next.size() > max_shared_matrices) return;
    std::lock_guard<std::mutex> lk(matmul_mutex_);
    const prepared_weight* prepared[max_shared_matrices];
    warm_decode_shares(pool_, k_, next, find_prepared(next, prepared), warm_budget);
  }

  void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) override {
    parallel_for(pool_, n_rows, 2 * n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) ref::rms_norm_row(x + r * n, w, y + r * n, n, eps, k_.sum_of_squares);
    });
  }

  void rope(float* x, int64_t n_tok, int n_head, int head_dim, const int32_t* positions,
            const rope_params& p) override {
    // Angles cost a cos and a sin per pair, so they are computed once per token and shared by heads.
    parallel_for(pool_, n_tok, int64_t(n_head) * head_dim + 16 * p.n_rot, [&](int64_t begin, int64_t end) {
      std::vector<float> cs(size_t(p.n_rot));
      for (int64_t t = begin; t < end; ++t) {
        ref::rope_cos_sin(positions[t], p, cs.data());
        for (int h = 0; h < n_head; ++h) ref::rope_apply(x + (t * n_head + h) * head_dim, p, cs.data());
      }
    });
  }

  // One KV head's rows are one stream for attention to read (a decode step meets them in memory), its
  // K in transposed chunks: scores with the slots in the lanes need no reduction across lanes.
  kv_order kv_layout() const override { return kv_order::head_major_kt; }

  void kv_store(const kv_layer_view& kv, const float* k, const float* v, const int32_t* positions,
                int64_t n_tok) override {
    // Tokens of one batch may share a ring slot; as in a sequential store, the last one wins, so
    // only the last writer of each slot stores.
    std::vector<uint8_t> is_last(size_t(n_tok), 1);
    if (n_tok > 1) {
      std::vector<std::pair<int64_t, int64_t>> slot_tok(static_cast<size_t>(n_tok));
      for (int64_t t = 0; t < n_tok; ++t) slot_tok[size_t(t)] = {positions[t] % kv.n_slots, t};
      std::sort(slot_tok.begin(), slot_tok.end());
      for (size_t i = 0; i + 1 < slot_tok.size(); ++i)
        if (slot_tok[i].first == slot_tok[i + 1].first) is_last[size_t(slot_tok[i].second)] = 0;
    }
    const int64_t per_tok = int64_t(kv.n_kv_head) * (kv.head_dim_k + kv.head_dim_v);
    const quantize_row_fn to_f16 = k_.quantizer(type_info(dtype::f16).quantize_row);
    parallel_for(pool_, n_tok, per_tok, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        if (is_last[size_t(t)]) ref::kv_store_token(kv, k, v, t, positions[t], to_f16);
    });
  }

  void attention(const kv_layer_view& kv, const float* q, const int32_t* positions, int64_t n_tok,
                 const attention_params& p, float* out) override {
    std::lock_guard<std::mutex> lk(attention_mutex_);
    cpu::attention(pool_, k_, kv, q, positions, n_tok, p, out, attention_);
  }

  void glu(const float* gate, const float* up, float* out, int64_t n_tok, int64_t n, activation act) override {
    // Cost per element in the units of parallel_for: the libm exp of the scalar loop, or a few
    // vector operations (one decode step's FFN width then stays on one thread: waking the other
    // would cost more than it saves).
    const int64_t cost = k_.glu == cpu::scalar_glu ? 16 : 2;
    parallel_for(pool_, n_tok * n, cost, [&](int64_t begin, int64_t end) {
      k_.glu(gate + begin, up + begin, out + begin, end - begin, act);
    });
  }

  void find_nonfinite(const float* x, int64_t n, nonfinite_record* record) override {
    // Each thread scans a range; the lowest index found is the first.
    std::atomic<int64_t> first{n};
    parallel_for(pool_, n, 1, [&](int64_t begin, int64_t end) {
      const int64_t i = first_nonfinite(x + begin, end - begin);
      if (i < 0) return;
      int64_t seen = first.load();
      while (begin + i < seen && !first.compare_exchange_weak(seen, begin + i)) {
      }
    });
    const int64_t i = first.load();
    *record = i < n ? nonfinite_record{i, x[i]} : nonfinite_record{};
  }

  void add(const float* a, const float* b, float* out, int64_t n) override {
    parallel_for(pool_, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = a[i] + b[i];
    });
  }

  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n) override {
    parallel_for(pool_, n_rows, n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t i = 0; i < n; ++i) x[r * n + i] += bias[i];
    });
  }

  void scale(float* x, float s, int64_t n) override {
    parallel_for(pool_, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) x[i] *= s;
    });
  }

  void softcap(float* x, float cap, int64_t n) override {
    parallel_for(pool_, n, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) x[i] = cap * std::tanh(x[i] / cap);
    });
  }

 private:
  // The prepared copy of exactly this matrix (same data, type and shape), if any.
  const prepared_weight* find_prepared(const weight_view& w) const {
    if (prepared_.empty()) return nullptr;
    const auto it = prepared_.find(w.data);
    if (it == prepared_.end()) return nullptr;
    const weight_view& s = it->second->source;
    const bool same = s.type == w.type && s.n_in == w.n_in && s.n_out == w.n_out && s.row_stride == w.row_stride;
    return same ? it->second.get() : nullptr;
  }

  // find_prepared of each of ws (at most max_shared_matrices) into out.
  std::span<const prepared_weight* const> find_prepared(std::span<const weight_view> ws,
                                                        const prepared_weight* (&out)[max_shared_matrices]) const {
    for (size_t i = 0; i < ws.size(); ++i) out[i] = find_prepared(ws[i]);
    return std::span<const prepared_weight* const>(out, ws.size());
  }

  thread_pool pool_;
  const kernel_table& k_;
  const bool repack_;
  std::mutex matmul_mutex_;
  matmul_scratch matmul_;
  huge_page_arena panel_arena_;  // every prepared matrix's panels, one after another
  std::unordered_map<const void*, std::unique_ptr<prepared_weight>> prepared_;  // by source data
  std::mutex attention_mutex_;
  attention_scratch attention_;
};

}  // namespace

std::unique_ptr<backend> make_cpu_backend(int n_threads, const kernel_table& k, bool repack_weights) {
  if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::make_unique<cpu_backend>(n_threads, k, repack_weights);
}

}  // namespace cpu

std::unique_ptr<backend> make_cpu_backend(int n_threads, bool repack_weights) {
  return cpu::make_cpu_backend(n_threads, cpu::kernels(), repack_weights);
}

result<std::unique_ptr<backend>> make_cpu_backend(int n_threads, bool repack_weights, const std::string& isa) {
  static constexpr std::pair<const char*, cpu::isa_level> levels[] = {
      {"scalar", cpu::isa_level::scalar}, {"avx2", cpu::isa_level::avx2}, {"avx512vnni", cpu::isa_level::avx512vnni},
      {"avx512amx", cpu::isa_level::avx512amx}, {"neon", cpu::isa_level::neon}};
  if (isa == "best") return make_cpu_backend(n_threads, repack_weights);
  for (const auto& [name, level] : levels) {
    if (isa != name) continue;
    const cpu::kernel_table& k = cpu::kernels_up_to(level);
    // The table names the best ISA it took kernels from: another name means this CPU lacks `isa`.
#if defined(GLIA_NO_AVX512_KERNELS)
    if (std::string_view(name).starts_with("avx512") && host_cpu_features().avx512vnni)
      return make_error("this build leaves out the {} kernels (GLIA_AVX512_KERNELS=OFF, or AUTO on a build machine without AVX-512 "
                        "VNNI); rebuild with -DGLIA_AVX512_KERNELS=ON",
                        isa);
#endif
    if (isa != k.isa) return make_error("this CPU cannot run the {} kernels (the best it runs: {})", isa, cpu::kernels().isa);
    return cpu::make_cpu_backend(n_threads, k, repack_weights);
  }
  return make_error("unknown CPU instruction set '{}' ({})", isa, fmt::join(cpu_isa_names, ", "));
}

}  // namespace glia
