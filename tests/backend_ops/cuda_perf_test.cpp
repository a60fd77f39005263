// Where a decode step's time goes on the GPU, op by op (disabled: run on a CUDA machine with
// --gtest_also_run_disabled_tests --gtest_filter='*CudaDecodePerf*'). Each op is recorded 20 times
// into one graph and the graph replayed, as the forward pass replays a step, so the per-op time
// includes the gap between graph nodes but no host launch cost. Reports, not assertions.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>

#include "backend/backend.h"
#include "harness.h"
#include "op_cases.h"

namespace glia::test {
namespace {

// Microseconds per op of `issue` (which issues one op), timed over replays of a recording.
double graph_us(backend& b, const std::function<void()>& issue) {
  constexpr int per_graph = 20, replays = 10;
  issue();  // sizes the backend's own buffers before recording
  b.synchronize();
  if (!b.begin_recording()) return -1.0;
  for (int i = 0; i < per_graph; ++i) issue();
  const int id = b.end_recording();
  if (id < 0) return -1.0;
  b.replay(id);
  b.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < replays; ++r) b.replay(id);
  b.synchronize();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  b.drop_recording(id);
  return us / (per_graph * replays);
}

TEST(CudaDecodePerf, DISABLED_ops_of_a_llama3_8b_step) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const auto b = make_cuda_backend();
  const double copy_bw = cuda_describe_device().copy_bytes_per_second;
  std::printf("%-34s %10s %10s %8s\n", "op", "us", "GB/s", "of copy");
  const int64_t n_embd = 4096, n_ff = 14336;
  backend_buffer x = b->alloc(size_t(n_ff) * 4), y = b->alloc(size_t(n_ff) * 4), z = b->alloc(size_t(n_ff) * 4);
  const auto xs = random_floats(size_t(n_ff), 1);
  b->upload(x.data(), xs.data(), xs.size() * 4);
  b->upload(y.data(), xs.data(), xs.size() * 4);
  auto report = [&](const char* name, double us, double bytes) {
    const double gbs = bytes / (us * 1e-6) / 1e9;
    std::printf("%-34s %10.2f %10.1f %7.1f%%\n", name, us, bytes > 0 ? gbs : 0.0, bytes > 0 ? 100.0 * gbs * 1e9 / copy_bw : 0.0);
  };
  std::deque<test_weight> weights;  // alive as long as the backend: it keeps copies by address
  for (dtype t : {dtype::q4_0, dtype::q8_0, dtype::f16, dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_xs}) {
    struct shape {
      const char* name;
      int64_t n_in, n_out;
    };
    for (const shape& s : {shape{"wq 4096x4096", n_embd, n_embd}, shape{"wk 1024x4096", n_embd, 1024},
                           shape{"gate 14336x4096", n_embd, n_ff}, shape{"down 4096x14336", n_ff, n_embd}}) {
      const test_weight& w = weights.emplace_back(make_weight(t, s.n_in, s.n_out, 3));
      b->prepare_weight(w.view);
      const double us = graph_us(*b, [&] { b->matmul(w.view, x.as<float>(), 1, y.as<float>()); });
      report((type_label(t) + " " + s.name).c_str(), us, double(w.bytes.size()));
    }
  }
  for (int64_t n_slots : {512, 4096}) {
    kv_fixture f(kv_shape{dtype::f16, n_slots, 8, 128, 128}, 5);
    backend_buffer k = b->alloc(f.k.size()), v = b->alloc(f.v.size()), sp = b->alloc(f.slot_pos.size() * 4);
    b->upload(k.data(), f.k.data(), f.k.size());
    b->upload(v.data(), f.v.data(), f.v.size());
    b->upload(sp.data(), f.slot_pos.data(), f.slot_pos.size() * 4);
    kv_layer_view kv = f.view();
    kv.k = k.data();
    kv.v = v.data();
    kv.slot_pos = sp.as<int32_t>();
    const int32_t pos_h = int32_t(n_slots - 1);
    backend_buffer pos = b->alloc(4);
    b->upload(pos.data(), &pos_h, 4);
    attention_params ap;
    ap.n_head = 32;
    ap.scale = 0.088f;
    const double us = graph_us(*b, [&] { b->attention(kv, x.as<float>(), pos.as<int32_t>(), 1, ap, z.as<float>()); });
    report(("attention 32h/8kv hd128 slots " + std::to_string(n_slots)).c_str(), us, double(f.k.size() + f.v.size()));
  }
  const auto norm_w = random_floats(size_t(n_embd), 2);
  b->prepare_data(norm_w.data(), norm_w.size() * 4);
  report("rms_norm 4096", graph_us(*b, [&] { b->rms_norm(x.as<float>(), norm_w.data(), y.as<float>(), 1, n_embd, 1e-5f); }), 0);
  report("add 4096", graph_us(*b, [&] { b->add(x.as<float>(), y.as<float>(), z.as<float>(), n_embd); }), 0);
  report("glu 14336", graph_us(*b, [&] { b->glu(x.as<float>(), y.as<float>(), z.as<float>(), 1, n_ff, activation::silu); }), 0);
  backend_buffer rec = b->alloc(sizeof(nonfinite_record));
  report("find_nonfinite 4096",
         graph_us(*b, [&] { b->find_nonfinite(x.as<float>(), n_embd, rec.as<nonfinite_record>()); }), 0);
  report("scale 1 (a graph node's floor)", graph_us(*b, [&] { b->scale(z.as<float>(), 1.0f, 1); }), 0);
}

}  // namespace
}  // namespace glia::test
