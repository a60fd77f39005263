// Perf mode of the harness (figures, not pass/fail; disabled by default). Run with
//   test_backend_ops --gtest_also_run_disabled_tests --gtest_filter='*Perf*'
// Prints, for a 2048 x 2048 weight and one token (a decode step), the GFLOP/s and the weight
// bandwidth of the reference backend and of the CPU backend with 1 thread and all threads.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backend/backend.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"
#include "core/bandwidth.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "harness.h"
#include "op_cases.h"

namespace glia::test {
namespace {

// Seconds per call: the best of `rounds` rounds, each timed over enough calls to fill
// budget / rounds seconds (the best round is the least disturbed by other processes on a shared
// machine; a budget below one call's time per round makes every round a single call).
template <typename F>
double seconds_per_call(F&& f, double budget = 0.5, int rounds = 5) {
  using clock = std::chrono::steady_clock;
  f();  // warm caches and the pool
  int reps = 1;
  const double round = budget / rounds;
  for (;;) {  // calibrate reps to one round
    const auto t0 = clock::now();
    for (int i = 0; i < reps; ++i) f();
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    if (s >= round || reps >= (1 << 20)) break;
    reps = s <= 0 ? reps * 16 : std::max(reps * 2, int(double(reps) * round / s * 1.2));
  }
  double best = INFINITY;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = clock::now();
    for (int i = 0; i < reps; ++i) f();
    best = std::min(best, std::chrono::duration<double>(clock::now() - t0).count() / reps);
  }
  return best;
}

TEST(backend_ops, DISABLED_MatmulPerf) {
  const int64_t n = 2048;
  const int hw = std::max(1, int(std::thread::hardware_concurrency()));
  const auto ref = make_ref_backend();
  const auto cpu1 = make_cpu_backend(1);
  const auto cpun = make_cpu_backend(hw);
  const auto x = random_floats(size_t(n), 1);
  std::vector<float> y(static_cast<size_t>(n));
  fmt::print("matmul {}x{}, n_tok=1; kernels: {}; {} hardware threads\n", n, n, cpu::kernels().isa, hw);
  fmt::print("{:<7} {:>6} {:>22} {:>22} {:>22} {:>22}\n", "type", "MiB", "ref", "cpu 1 thread",
             fmt::format("cpu {} threads", hw), "cpu 1 thr, L2-hot");
  for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::f16, dtype::bf16, dtype::f32, dtype::q4_k, dtype::q6_k}) {
    const test_weight w = make_weight(t, n, n, 3);
    auto cell = [&](backend& b, const weight_view& wv) {
      const double bytes = double(wv.row_stride) * double(wv.n_out);
      const double s = seconds_per_call([&] { b.matmul(wv, x.data(), 1, y.data()); });
      return fmt::format("{:7.2f} GF/s {:6.1f} GB/s", 2.0 * double(wv.n_in) * double(wv.n_out) / s * 1e-9,
                         bytes / s * 1e-9);
    };
    // The first 64 rows only: small enough to stay in L2, so this column measures the kernel
    // rather than the memory system.
    weight_view hot = w.view;
    hot.n_out = 64;
    fmt::print("{:<7} {:>6.2f} {:>22} {:>22} {:>22} {:>22}  [{}]\n", type_label(t), double(w.bytes.size()) / (1 << 20),
               cell(*ref, w.view), cell(*cpu1, w.view), cell(*cpun, w.view), cell(*cpu1, hot),
               cpu::kernels().vec_dot_isa(t));
  }
}

// The weight matrices of TinyLlama-1.1B layers (n_embd 2048, 4 KV heads of 64, n_ff 5632), as
// random bytes with finite block scales: what a decode step streams (speed does not depend on the
// values). Q4_K_M files mix Q4_K and Q6_K (attn_v and ffn_down in Q6_K for half the layers); here
// every other layer gets Q6_K for those two.
struct layer_stack {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<weight_view> views;
  double total_bytes = 0;
  double macs = 0;
};

layer_stack make_layers(dtype type, int n_layers) {
  struct shape {
    int64_t n_out, n_in;
    bool k_mix;  // Q6_K on odd layers of a Q4_K_M stack
  };
  const shape shapes[] = {{2048, 2048, false}, {256, 2048, false}, {256, 2048, true}, {2048, 2048, false},
                          {5632, 2048, false}, {5632, 2048, false}, {2048, 5632, true}};
  layer_stack s;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int l = 0; l < n_layers; ++l) {
    for (const shape& sh : shapes) {
      const dtype t = type == dtype::q4_k && sh.k_mix && l % 2 ? dtype::q6_k : type;
      const type_traits& tt = type_info(t);
      const size_t stride = row_bytes(tt, sh.n_in);
      std::vector<uint8_t> b(stride * size_t(sh.n_out));
      for (size_t i = 0; i + 8 <= b.size(); i += 8) {  // xorshift: fast filler
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        std::memcpy(b.data() + i, &state, 8);
      }
      // Finite scales: overwrite each block's fp16 fields (offsets as in the mm kernel test).
      const uint16_t d = f32_to_fp16(0.01f);
      for (size_t blk = 0; blk < b.size() / tt.block_bytes; ++blk) {
        uint8_t* p = b.data() + blk * tt.block_bytes;
        if (t == dtype::q6_k) std::memcpy(p + 208, &d, 2);
        else std::memcpy(p, &d, 2);
        if (t == dtype::q4_k) std::memcpy(p + 2, &d, 2);
      }
      s.views.push_back(weight_view{t, sh.n_in, sh.n_out, nullptr, stride});
      s.total_bytes += double(b.size());
      s.macs += double(sh.n_in) * double(sh.n_out);
      s.bytes.push_back(std::move(b));
    }
  }
  for (size_t i = 0; i < s.views.size(); ++i) s.views[i].data = s.bytes[i].data();
  return s;
}

// Decode: one token through 8 TinyLlama layers (far beyond the last-level cache), as GB/s of
// weights and as a fraction of the read bandwidth measured in the same run, for each kernel
// level this host runs (AVX2 is what Zen 3 runs; an AVX-512 host can measure it too).
TEST(backend_ops, DISABLED_DecodeBandwidthPerf) {
  const int hw = std::max(1, int(std::thread::hardware_concurrency()));
  for (int nth : {1, hw}) {
    bandwidth_options bo;
    bo.n_threads = nth;
    bo.n_passes = 3;
    const auto bw = measure_read_bandwidth(bo);
    ASSERT_TRUE(bw.is_ok()) << bw.message();
    for (const cpu::isa_level level : host_mm_levels()) {
      const cpu::kernel_table& kt = cpu::kernels_up_to(level);
      const auto b = cpu::make_cpu_backend(nth, kt);
      // Q4_K is Q4_K_M's mix (see make_layers); Q6_K alone shows that mix's other half.
      for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::q4_k, dtype::q6_k}) {
        const layer_stack s = make_layers(t, 8);
        for (const weight_view& w : s.views) b->prepare_weight(w);  // repacked, as a loaded model's are
        const auto x = random_floats(5632, 1);
        std::vector<float> y(5632);
        const double sec = seconds_per_call([&] {
          for (const weight_view& w : s.views) b->matmul(w, x.data(), 1, y.data());
        }, 2.0);
        // As the forward pass calls them: q/k/v and gate/up as shared-input lists, the GLU between,
        // each call hinting the next one's weights.
        std::vector<float> g(5632), u(5632);
        const double sec_fw = seconds_per_call([&] {
          for (size_t l = 0; l < s.views.size(); l += 7) {
            const weight_view* v = &s.views[l];
            float* const qkv_out[] = {y.data(), g.data(), u.data()};
            b->matmul_shared(std::span(v, 3), x.data(), 1, qkv_out);
            b->prefetch_weights(std::span(v + 3, 1));
            b->matmul(v[3], x.data(), 1, y.data());
            b->prefetch_weights(std::span(v + 4, 2));
            float* const gu_out[] = {g.data(), u.data()};
            b->matmul_shared(std::span(v + 4, 2), x.data(), 1, gu_out);
            b->prefetch_weights(std::span(v + 6, 1));
            b->glu(g.data(), u.data(), g.data(), 1, 5632, activation::silu);
            b->matmul(v[6], x.data(), 1, y.data());
            if (l + 7 < s.views.size()) b->prefetch_weights(std::span(v + 7, 3));
          }
        }, 2.0);
        const double gbs = s.total_bytes / sec * 1e-9;
        fmt::print("decode {:<10} {:<6} {} thr: {:6.1f} MiB/token-of-8-layers {:7.2f} ms  {:6.2f} GB/s = {:5.1f}% of {:.2f} GB/s read bandwidth\n",
                   kt.isa, t == dtype::q4_k ? std::string("Q4_K_M") : std::string(type_label(t)), nth, s.total_bytes / (1 << 20), sec * 1e3, gbs,
                   100.0 * gbs / (bw->bytes_per_second * 1e-9), bw->bytes_per_second * 1e-9);
        fmt::print("  as the forward pass calls them: {:6.2f} GB/s = {:5.1f}%\n", s.total_bytes / sec_fw * 1e-9,
                   100.0 * s.total_bytes / sec_fw / bw->bytes_per_second);
      }
    }
  }
}

// Prefill: n_tok tokens through one TinyLlama layer's matmuls, as GMAC/s and as matmul-only
// tokens/s of the 22-layer model.
TEST(backend_ops, DISABLED_PrefillPerf) {
  const int hw = std::max(1, int(std::thread::hardware_concurrency()));
  const int64_t n_tok = 128;
  const auto x = random_floats(size_t(5632 * n_tok), 2);
  std::vector<float> y(size_t(5632 * n_tok));
  for (int nth : {1, hw}) {
    const auto b = make_cpu_backend(nth);
    for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::q4_k}) {
      const layer_stack s = make_layers(t, 2);
      const double sec = seconds_per_call([&] {
        for (const weight_view& w : s.views) b->matmul(w, x.data(), n_tok, y.data());
      }, 2.0);
      const double macs = s.macs * double(n_tok);
      fmt::print("prefill {:<5} {} thr, {} tokens: {:7.1f} GMAC/s = {:6.1f} t/s for 22 layers of matmuls\n", type_label(t),
                 nth, n_tok, macs / sec * 1e-9, double(n_tok) / (sec * 11.0));
    }
  }
}

// CPU seconds of the calling thread: on a shared machine, time spent descheduled does not count.
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Clock cycles this thread gets per CPU second right now, from a chain of dependent integer
// multiplies: turns kernel times into cycles, which stay comparable when a shared or throttled
// machine changes speed.
double cycles_per_cpu_second() {
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    // A chain of dependent 64-bit multiplies, 3 cycles each on every x86 core we run on (Intel
    // since Core 2, AMD Zen 1-5). A chain of adds of an immediate was used before: Intel's Golden
    // Cove cores fold those at rename, which read as a 12-13 GHz clock.
    uint64_t v = 1;
    const int64_t n = 20'000'000;
    const double t0 = thread_cpu_seconds();
    for (int64_t i = 0; i < n; i += 4) {
#if defined(__x86_64__)
      asm volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0" : "+r"(v));
#else
      v *= v;
#endif
    }
    best = std::max(best, 3.0 * double(n) / (thread_cpu_seconds() - t0));
    EXPECT_EQ(v, uint64_t(1));
  }
  return best;
}

// The mm kernel of type t that `level` adds (null where the level below has the same one, or none),
// so that each kernel is timed once, at the lowest level that has it.
const cpu::mm_kernel* own_mm_kernel(cpu::isa_level level, dtype t) {
  const cpu::mm_kernel* mk = cpu::kernels_up_to(level).mm(t);
  if (level != cpu::isa_level::avx2 && mk == cpu::kernels_up_to(cpu::isa_level(int(level) - 1)).mm(t)) return nullptr;
  return mk;
}

// Thread CPU seconds of one call of f, the best of `rounds` rounds of `calls` calls.
template <typename F>
double best_cpu_seconds(F&& f, int rounds = 7, int calls = 5) {
  double b = INFINITY;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = thread_cpu_seconds();
    for (int i = 0; i < calls; ++i) f();
    b = std::min(b, (thread_cpu_seconds() - t0) / calls);
  }
  return b;
}

// The mm kernels alone on one thread with everything in cache, timed in thread CPU time (so the
// figures do not depend on how busy the machine is): pack, gemm over 64 tokens, gemv, and gemm over
// the panels for one token (decode on prepared weights).
TEST(backend_ops, DISABLED_MmKernelPerf) {
  const int64_t n_in = 2048, n_out = 64, n_tok = 64;
  for (const auto level : host_mm_levels())
  for (dtype t : {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::iq4_nl, dtype::q8_0, dtype::q2_k, dtype::q3_k,
                  dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_xs, dtype::f16, dtype::bf16, dtype::f32}) {
    const cpu::kernel_table& kt = cpu::kernels_up_to(level);
    const cpu::mm_kernel* mk = own_mm_kernel(level, t);
    if (!mk) continue;
    const test_weight w = make_weight(t, n_in, n_out, 3);
    const converted acts = convert(*mk, random_floats(size_t(n_in * n_tok), 4), n_in, n_tok);
    const cpu::act_rows& a = acts.rows;
    const int64_t nb = a.nb;
    // One token as decode converts it (the float kernels' widened rows are element-major, so a
    // lone token's elements lie side by side).
    std::vector<float> wide1(mk->widen ? size_t(n_in) : 0);
    if (mk->widen) mk->widen(a.data, n_in, wide1.data(), 1);
    const cpu::act_rows a1{a.data, a.stride, a.d, a.sum, nb, mk->widen ? wide1.data() : nullptr, 1};
    cpu::aligned_buffer buf;
    const size_t panel_bytes = size_t(nb) * mk->packed_block_bytes;
    uint8_t* panels = buf.get(panel_bytes * size_t(n_out / 8));
    std::vector<float> y(size_t(n_out * n_tok));
    const double s_pack = best_cpu_seconds([&] {
      for (int64_t p = 0; p < n_out / 8; ++p) mk->pack(w.view, 8 * p, 8, panels + size_t(p) * panel_bytes);
    });
    const double s_gemm = best_cpu_seconds([&] {
      mk->gemm(panels, panel_bytes, n_out / 8, nb, a, 0, n_tok, y.data(), size_t(n_out), 8);
    });
    const double s_gemv = best_cpu_seconds([&] { mk->gemv(w.view, 0, n_out, a1, 0, 1, y.data(), size_t(n_out)); });
    // Decode on prepared weights: the gemm kernel over the panels for one token.
    const double s_panel1 = best_cpu_seconds([&] {
      mk->gemm(panels, panel_bytes, n_out / 8, nb, a1, 0, 1, y.data(), size_t(n_out), 8);
    });
    // The same in two streams: the first half of the panels paired with the second.
    const int64_t half = n_out / 16;
    const double s_streams = !mk->gemv_streams ? NAN : best_cpu_seconds([&] {
      mk->gemv_streams(panels, size_t(half) * panel_bytes, panel_bytes, half, nb, a1, 0, y.data(), y.data() + 8 * half);
    });
    const double macs = double(n_in) * double(n_out);
    const double wbytes = double(w.view.row_stride) * double(n_out);
    const double hz = cycles_per_cpu_second();
    fmt::print("{:<10} {:<5} pack {:5.2f} B/cycle | gemm {:5.1f} MAC/cycle ({} tokens) | gemv {:5.2f}, on panels {:5.2f}, in two streams {:5.2f} B/cycle of weights  [{:.2f} GHz; 1 thread, in cache]\n",
               kt.mm_isa_by_id[uint32_t(t)], type_label(t), wbytes / s_pack / hz, macs * double(n_tok) / s_gemm / hz, n_tok, wbytes / s_gemv / hz,
               wbytes / s_panel1 / hz, wbytes / s_streams / hz, hz * 1e-9);
  }
}

// Prompt matmul kernels over one prefill work item: 10 panels (80 rows, about the block of panels
// a thread keeps in L2) of 2048 inputs times a 512-token prompt in one call, on one thread, from
// prepared panels. That is how matmul calls the AMX kernels (which stage the panels per call, and
// this includes it); the others it calls per token tile (~40 tokens of 2048 Q8_0 inputs), so their
// figures here are a shape they do not run in. For each level's own kernels of the TinyLlama mixes.
TEST(backend_ops, DISABLED_PrefillGemmPerf) {
  const int64_t n_in = 2048, n_panels = 10, n_tok = 512;
  for (const auto level : host_mm_levels())
    for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::q4_k, dtype::q6_k}) {
      const cpu::kernel_table& kt = cpu::kernels_up_to(level);
      const cpu::mm_kernel* mk = own_mm_kernel(level, t);
      if (!mk) continue;
      const test_weight w = make_weight(t, n_in, 8 * n_panels, 3);
      const converted acts = convert(*mk, random_floats(size_t(n_in * n_tok), 4), n_in, n_tok);
      const size_t panel_bytes = size_t(acts.rows.nb) * mk->packed_block_bytes;
      cpu::aligned_buffer buf;
      uint8_t* panels = buf.get(panel_bytes * size_t(n_panels));
      for (int64_t p = 0; p < n_panels; ++p) mk->pack(w.view, 8 * p, 8, panels + size_t(p) * panel_bytes);
      std::vector<float> y(size_t(8 * n_panels * n_tok));
      const double s = best_cpu_seconds(
          [&] { mk->gemm(panels, panel_bytes, n_panels, acts.rows.nb, acts.rows, 0, n_tok, y.data(), size_t(8 * n_panels), 8); },
          9, 2);
      const double hz = cycles_per_cpu_second();
      fmt::print("{:<10} {:<5} {:6.1f} MAC/cycle  [{:.2f} GHz; 1 thread]\n", kt.mm_isa_by_id[uint32_t(t)], type_label(t),
                 double(n_in) * double(8 * n_panels) * double(n_tok) / s / hz, hz * 1e-9);
    }
}

// Seconds of one call of f with the `flush` byte ranges flushed from every cache level first (where
// the ISA can) and then wake() called: how a decode step meets its layer's KV cache after the
// weights of a whole step have streamed through the caches. The median of `reps` calls.
template <typename W, typename F>
double seconds_cold(const std::vector<std::pair<const uint8_t*, size_t>>& flush, int reps, W&& wake, F&& f) {
  using clock = std::chrono::steady_clock;
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
#if defined(__x86_64__)
    for (const auto& [p, n] : flush)
      for (size_t i = 0; i < n; i += 64) _mm_clflush(p + i);
    _mm_mfence();
#endif
    wake();
    const auto t0 = clock::now();
    f();
    s.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  std::nth_element(s.begin(), s.begin() + reps / 2, s.end());
  return s[size_t(reps / 2)];
}

// Attention over a long F16 cache with TinyLlama's heads (32 query heads, 4 KV heads of 64): one
// decode step at position 2047, and 64 prefill tokens at the end of the same cache.
TEST(backend_ops, DISABLED_AttentionPerf) {
  const kv_shape shape{dtype::f16, 2048, 4, 64, 64};
  const kv_order order = make_cpu_backend(1)->kv_layout();  // the layout the CPU backend stores
  kv_fixture f(shape, 5, order);
  for (int64_t s = 0; s < shape.n_slots; ++s) f.slot_pos[size_t(s)] = int32_t(s);  // full, in order
  const int n_head = 32;
  const auto q = random_floats(size_t(64 * n_head * 64), 6);
  std::vector<float> out(size_t(64 * n_head * 64));
  std::vector<int32_t> pos(64);
  for (int i = 0; i < 64; ++i) pos[size_t(i)] = 2048 - 64 + i;
  attention_params p{n_head, 0.125f, 0.0f, 0};
  kv_fixture mqa(kv_shape{dtype::f16, 2048, 1, 256, 256}, 7, order);
  for (int64_t s = 0; s < 2048; ++s) mqa.slot_pos[size_t(s)] = int32_t(s);
  const attention_params p_mqa{4, 0.0625f, 0.0f, 0};
  kv_fixture waker(kv_shape{dtype::f16, 128, 4, 64, 64}, 11, order);
  const int hw = std::max(1, int(std::thread::hardware_concurrency()));
  for (const cpu::kernel_table* table : host_attend_tables())
  for (int nth : {1, hw}) {
    const cpu::kernel_table& kt = *table;
    const auto b = cpu::make_cpu_backend(nth, kt);
    const double s1 = seconds_per_call([&] { b->attention(f.view(), q.data() + 63 * n_head * 64, &pos[63], 1, p, out.data()); });
    const double s64 = seconds_per_call([&] { b->attention(f.view(), q.data(), pos.data(), 64, p, out.data()); });
    const int32_t early = 70;  // a short context in a long cache: what a decode step costs near the start
    const double s_early = seconds_per_call([&] { b->attention(f.view(), q.data(), &early, 1, p, out.data()); });
    kv_layer_view small = f.view();
    small.n_live = 128;
    const double s_small = seconds_per_call([&] { b->attention(small, q.data(), &early, 1, p, out.data()); });
    fmt::print("attention {} thr: decode @70 of 2048 slots {:7.3f} ms, of 128 slots {:7.3f} ms\n", nth, s_early * 1e3, s_small * 1e3);
    // Multiply-adds: q.k and p.v over the visible slots for every head.
    const double fma1 = 2048.0 * n_head * 128, fma64 = (2048.0 - 32) * 64 * n_head * 128;
    fmt::print("attention {} thr: decode @2048 {:7.3f} ms ({:5.1f} GFMA/s) | 64 tokens {:7.2f} ms ({:5.1f} GFMA/s)  [{}]\n", nth,
               s1 * 1e3, fma1 / s1 * 1e-9, s64 * 1e3, fma64 / s64 * 1e-9, kt.attend_isa);
    // Wakes the pool's threads (a step's earlier ops leave them spinning) without touching f.
    auto wake = [&] { b->attention(waker.view(), q.data(), &early, 1, p, out.data()); };
    const double s_cold = seconds_cold({{f.k.data(), f.k.size()}, {f.v.data(), f.v.size()}}, 41, wake, [&] {
      b->attention(f.view(), q.data() + 63 * n_head * 64, &pos[63], 1, p, out.data());
    });
    fmt::print("attention {} thr: decode @2048 from memory {:7.3f} ms ({:5.1f} GB/s of K and V)  [{}]\n", nth, s_cold * 1e3,
               double(f.k.size() + f.v.size()) / s_cold * 1e-9, kt.attend_isa);
    // One KV head (Gemma 3 1B's attention: 4 query heads of 256): a decode step has one (tile, KV
    // head) pair, so only the cache's segments give a second thread work.
    const double s_mqa = seconds_per_call([&] { b->attention(mqa.view(), q.data(), &pos[63], 1, p_mqa, out.data()); });
    fmt::print("attention {} thr: one KV head, decode @2048 {:7.3f} ms ({:5.1f} GFMA/s)  [{}]\n", nth, s_mqa * 1e3,
               2048.0 * 4 * 512 / s_mqa * 1e-9, kt.attend_isa);
  }
}

// Prefill attention deep in a context (the last ubatch of 128 of a 4096-token prompt, depth 3968):
// 128 tokens with TinyLlama's heads over a 4096-slot F16 cache, each seeing the slots up to its own
// position. At depth this is a large part of a prompt's time (the matrices cost the same per token
// at any depth). Best of 15 calls: on a shared host the quiet moments are what compares.
TEST(backend_ops, DISABLED_AttentionPrefillPerf) {
  const int64_t n_slots = 4096, n_tok = 128;
  const int n_head = 32, dk = 64;
  const kv_shape shape{dtype::f16, n_slots, 4, dk, dk};
  kv_fixture f(shape, 5, make_cpu_backend(1)->kv_layout());
  for (int64_t s = 0; s < n_slots; ++s) f.slot_pos[size_t(s)] = int32_t(s);
  const auto q = random_floats(size_t(n_tok * n_head * dk), 6);
  std::vector<float> out(q.size());
  std::vector<int32_t> pos(static_cast<size_t>(n_tok));
  for (int64_t i = 0; i < n_tok; ++i) pos[size_t(i)] = int32_t(n_slots - n_tok + i);
  const attention_params p{n_head, 0.125f, 0.0f, 0};
  // Multiply-adds: q.k and p.v over the visible slots (position + 1 of them) for every head.
  const double fma = (double(n_slots - n_tok) * double(n_tok) + double(n_tok) * double(n_tok + 1) / 2) * n_head * 2 * dk;
  const int hw = std::max(1, int(std::thread::hardware_concurrency()));
  for (const cpu::kernel_table* table : host_attend_tables())
    for (int nth : {1, hw}) {
      const auto b = cpu::make_cpu_backend(nth, *table);
      // Rounds of 10 ms: each a single call (tens of ms), the best of 15 kept.
      const double s = seconds_per_call([&] { b->attention(f.view(), q.data(), pos.data(), n_tok, p, out.data()); }, 0.15, 15);
      fmt::print("attention {} thr: {} tokens at depth {}: {:8.2f} ms ({:5.1f} GFMA/s)  [{}]\n", nth, n_tok, n_slots - n_tok,
                 s * 1e3, fma / s * 1e-9, table->attend_isa);
    }
}

// Cost of one empty job: what every parallel op pays on top of its work.
TEST(backend_ops, DISABLED_ThreadPoolPerf) {
  for (int nth : {2, 3, 4}) {
    thread_pool pool(nth);
    const double s = seconds_per_call([&] { pool.run([](int, int) {}); }, 0.2);
    const double sd = seconds_per_call([&] { pool.run_dynamic([](int, int) {}); }, 0.2);
    fmt::print("thread_pool({}): {:.2f} us per empty run, {:.2f} per empty run_dynamic\n", nth, s * 1e6, sd * 1e6);
  }
}

}  // namespace
}  // namespace glia::test
