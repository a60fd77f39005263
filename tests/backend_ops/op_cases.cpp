// The table of op cases: each builds its inputs from fixed seeds, runs one op on the backend it is
// given and returns everything the op wrote. ops_test.cpp runs each case on "ref" and on "cpu" with
// 1, 2 and 3 threads and compares by normalized MSE.
#include "op_cases.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>

#include "backend/ref/ref_ops.h"
#include "core/fp16.h"
#include "harness.h"
#include "quant/activation.h"

namespace glia::test {
namespace {

// The ops whose CPU version evaluates the same per-element formula as the reference must match it
// exactly; the ones whose kernels reorder float sums get a tolerance far below any model effect.
constexpr double exact = 0.0;
constexpr double reordered = 1e-6;
// SiLU's CPU kernel uses a vector exp (a few ulp from libm's); GELU reads the reference's table.
constexpr double vector_exp = 1e-12;

void add_matmul_cases(std::vector<op_case>& cases) {
  struct shape {
    int64_t n_out, n_tok;
  };
  const shape shapes[] = {{1, 1}, {5, 3}, {67, 17}};
  for (dtype t : weight_types()) {
    for (int64_t n_in : awkward_n_in(t)) {
      for (const shape& s : shapes) {
        cases.push_back({fmt::format("matmul_{}_in{}_out{}_tok{}", type_label(t), n_in, s.n_out, s.n_tok), reordered,
                         [=](backend& b) {
                           const test_weight w = make_weight(t, n_in, s.n_out, uint32_t(n_in * 31 + s.n_out));
                           const auto x = random_floats(size_t(n_in * s.n_tok), 17, -2.0f, 2.0f);
                           std::vector<float> y(size_t(s.n_out * s.n_tok));
                           b.matmul(w.view, x.data(), s.n_tok, y.data());
                           return y;
                         }});
      }
    }
  }
}

// A weight made once and kept for the whole run: the backends the cases share keep what they
// prepared by address, which a freed weight's successor could take.
const test_weight& lasting_weight(dtype t, int64_t n_in, int64_t n_out, uint32_t seed) {
  static std::map<std::tuple<dtype, int64_t, int64_t, uint32_t>, test_weight> made;
  const auto key = std::make_tuple(t, n_in, n_out, seed);
  auto it = made.find(key);
  if (it == made.end()) it = made.emplace(key, make_weight(t, n_in, n_out, seed)).first;
  return it->second;
}

// The feed-forward's gate, up and activation in one op (backend::matmul_glu), on weights the
// backend prepared (where the CPU fuses the activation into a prompt's matmuls).
void add_matmul_glu_cases(std::vector<op_case>& cases) {
  for (dtype t : {dtype::q4_0, dtype::q4_k, dtype::f16}) {
    for (int64_t n_tok : {1, 9}) {
      const activation act = t == dtype::q4_k ? activation::gelu_tanh : activation::silu;
      cases.push_back({fmt::format("matmul_glu_{}_tok{}", type_label(t), n_tok), vector_exp, [=](backend& b) {
                         const int64_t n_in = 512, n_out = 77;
                         const test_weight& gate = lasting_weight(t, n_in, n_out, 41);
                         const test_weight& up = lasting_weight(t, n_in, n_out, 42);
                         b.prepare_weight(gate.view);
                         b.prepare_weight(up.view);
                         const auto x = random_floats(size_t(n_in * n_tok), 43, -2.0f, 2.0f);
                         std::vector<float> out(size_t(n_out * n_tok)), up_room(out.size());
                         b.matmul_glu(gate.view, up.view, x.data(), n_tok, act, out.data(), up_room.data(), {});
                         return out;
                       }});
    }
  }
}

void add_get_rows_cases(std::vector<op_case>& cases) {
  for (dtype t : weight_types()) {
    const int64_t n_in = awkward_n_in(t).back();
    cases.push_back({fmt::format("get_rows_{}_in{}", type_label(t), n_in), exact, [=](backend& b) {
                       const test_weight w = make_weight(t, n_in, 11, 5);
                       const std::vector<int32_t> ids = {3, 0, 10, 3, 7};
                       std::vector<float> out(size_t(n_in) * ids.size());
                       b.get_rows(w.view, ids.data(), int64_t(ids.size()), out.data());
                       return out;
                     }});
  }
}

void add_norm_cases(std::vector<op_case>& cases) {
  for (int64_t n : {1, 7, 4097}) {
    for (int64_t rows : {1, 5}) {
      for (bool weighted : {false, true}) {
        cases.push_back({fmt::format("rms_norm_n{}_rows{}_{}", n, rows, weighted ? "w" : "nw"), exact, [=](backend& b) {
                           auto x = random_floats(size_t(n * rows), 3, -4.0f, 4.0f);
                           const auto w = random_floats(size_t(n), 4);
                           b.rms_norm(x.data(), weighted ? w.data() : nullptr, x.data(), rows, n, 1e-5f);  // in place
                           return x;
                         }});
      }
    }
  }
}

void add_rope_cases(std::vector<op_case>& cases) {
  struct rc {
    const char* name;
    int n_head, head_dim, n_rot;
    rope_style style;
    bool freq_factors;
    float ext_factor, freq_scale;
  };
  const rc list[] = {
      {"normal", 3, 8, 8, rope_style::normal, false, 0.0f, 1.0f},
      {"neox", 2, 64, 64, rope_style::neox, false, 0.0f, 1.0f},
      {"partial_neox", 5, 40, 16, rope_style::neox, false, 0.0f, 0.25f},
      {"freq_factors", 2, 64, 64, rope_style::normal, true, 0.0f, 1.0f},
      // Llama 3.1 folders: Q/K in checkpoint order, so NeoX pairs with rope_freqs (and YaRN).
      {"neox_freq_factors", 2, 64, 64, rope_style::neox, true, 0.0f, 1.0f},
      {"neox_yarn_freq_factors", 3, 32, 32, rope_style::neox, true, 1.0f, 0.25f},
      {"yarn", 4, 32, 32, rope_style::neox, false, 1.0f, 0.25f},
  };
  for (const rc& c : list) {
    for (int64_t n_tok : {1, 9}) {
      cases.push_back({fmt::format("rope_{}_tok{}", c.name, n_tok), exact, [=](backend& b) {
                         auto x = random_floats(size_t(n_tok * c.n_head * c.head_dim), 8);
                         std::vector<int32_t> pos(static_cast<size_t>(n_tok));
                         for (int64_t t = 0; t < n_tok; ++t) pos[size_t(t)] = int32_t(t * 37 + 5);
                         const auto ff = random_floats(size_t(c.n_rot / 2), 9, 1.0f, 8.0f);
                         rope_params p;
                         p.n_rot = c.n_rot;
                         p.style = c.style;
                         p.freq_base = 10000.0f;
                         p.freq_scale = c.freq_scale;
                         p.freq_factors = c.freq_factors ? ff.data() : nullptr;
                         p.ext_factor = c.ext_factor;
                         p.n_ctx_orig = 4096;
                         b.rope(x.data(), n_tok, c.n_head, c.head_dim, pos.data(), p);
                         return x;
                       }});
    }
  }
}

void add_elementwise_cases(std::vector<op_case>& cases) {
  for (int64_t n : {1, 13, 100003}) {
    cases.push_back({fmt::format("add_n{}", n), exact, [=](backend& b) {
                       const auto a = random_floats(size_t(n), 1), c = random_floats(size_t(n), 2);
                       std::vector<float> out(static_cast<size_t>(n));
                       b.add(a.data(), c.data(), out.data(), n);
                       return out;
                     }});
    cases.push_back({fmt::format("scale_n{}", n), exact, [=](backend& b) {
                       auto x = random_floats(size_t(n), 3);
                       b.scale(x.data(), 0.37f, n);
                       return x;
                     }});
    cases.push_back({fmt::format("softcap_n{}", n), exact, [=](backend& b) {
                       auto x = random_floats(size_t(n), 4, -30.0f, 30.0f);
                       b.softcap(x.data(), 15.0f, n);
                       return x;
                     }});
  }
  for (int64_t rows : {1, 3, 300}) {
    cases.push_back({fmt::format("add_bias_rows{}", rows), exact, [=](backend& b) {
                       auto x = random_floats(size_t(rows * 333), 5);
                       const auto bias = random_floats(333, 6);
                       b.add_bias(x.data(), bias.data(), rows, 333);
                       return x;
                     }});
  }
  for (activation act : {activation::silu, activation::gelu_tanh}) {
    for (int64_t n_tok : {1, 4}) {
      const char* an = act == activation::silu ? "silu" : "gelu";
      cases.push_back({fmt::format("glu_{}_tok{}", an, n_tok), act == activation::silu ? vector_exp : exact, [=](backend& b) {
                         const int64_t n = 9001;
                         const auto g = random_floats(size_t(n * n_tok), 7, -12.0f, 12.0f);
                         const auto u = random_floats(size_t(n * n_tok), 8);
                         std::vector<float> out(size_t(n * n_tok));
                         b.glu(g.data(), u.data(), out.data(), n_tok, n, act);
                         return out;
                       }});
    }
  }
}

}  // namespace

// A KV cache of random contents: slots hold a shuffled set of positions with some slots empty.
kv_fixture::kv_fixture(const kv_shape& s, uint32_t seed, kv_order o) : shape(s), order(o) {
  const size_t nk = size_t(s.n_slots) * size_t(s.n_kv_head) * size_t(s.head_dim_k);
  const size_t nv = size_t(s.n_slots) * size_t(s.n_kv_head) * size_t(s.head_dim_v);
  // Drawn in slot-major order whatever the layout, so every layout holds the same cache.
  const auto kf = random_floats(nk, seed, -1.5f, 1.5f);
  const auto vf = random_floats(nv, seed + 1);
  const size_t elem = s.type == dtype::f16 ? 2 : 4;
  // Padding a layout has (whole chunks of a transposed K) holds NaN: a kernel that lets it into a
  // result fails the comparisons.
  const uint16_t nan_half = 0x7E00;
  const float nan_f32 = std::numeric_limits<float>::quiet_NaN();
  auto fill_nan = [&](std::vector<uint8_t>& buf, int64_t n) {
    buf.resize(size_t(n) * elem);
    for (int64_t i = 0; i < n; ++i) std::memcpy(buf.data() + size_t(i) * elem, elem == 2 ? static_cast<const void*>(&nan_half) : &nan_f32, elem);
  };
  fill_nan(k, kv_buffer_elements(o, kv_part::k, s.n_slots, s.n_kv_head, s.head_dim_k));
  fill_nan(v, kv_buffer_elements(o, kv_part::v, s.n_slots, s.n_kv_head, s.head_dim_v));
  const kv_layer_view lay = view();
  auto put = [&](std::vector<uint8_t>& dst, const std::vector<float>& src, kv_part part, int head_dim) {
    for (int64_t slot = 0; slot < s.n_slots; ++slot)
      for (int h = 0; h < s.n_kv_head; ++h)
        for (int d = 0; d < head_dim; ++d) {
          const float x = src[size_t((slot * s.n_kv_head + h) * head_dim + d)];
          const size_t i = size_t(lay.offset(part, slot, h, d));
          if (s.type == dtype::f16) {
            const uint16_t half = f32_to_fp16(x);
            std::memcpy(dst.data() + 2 * i, &half, 2);
          } else {
            std::memcpy(dst.data() + 4 * i, &x, 4);
          }
        }
  };
  put(k, kf, kv_part::k, s.head_dim_k);
  put(v, vf, kv_part::v, s.head_dim_v);
  slot_pos.resize(size_t(s.n_slots));
  std::iota(slot_pos.begin(), slot_pos.end(), 0);
  std::mt19937 rng(seed + 2);
  std::shuffle(slot_pos.begin(), slot_pos.end(), rng);
  for (int64_t i = 0; i < s.n_slots; i += 5) slot_pos[size_t(i)] = -1;  // empty slots
}

kv_layer_view kv_fixture::view() {
  kv_layer_view kv;
  kv.type = shape.type;
  kv.k = k.data();
  kv.v = v.data();
  kv.slot_pos = slot_pos.data();
  kv.n_slots = shape.n_slots;
  kv.n_kv_head = shape.n_kv_head;
  kv.head_dim_k = shape.head_dim_k;
  kv.head_dim_v = shape.head_dim_v;
  kv.order = order;
  return kv;
}

namespace {

// The cache run_attention reads for a shape in an order, drawn once per process: the attention
// tests call it thousands of times with the same few shapes, and drawing and converting the cache
// took most of their time (three quarters of attention.every_kv_order_gives_the_same_bits).
// Attention only reads the cache.
kv_fixture& shared_kv_fixture(const kv_shape& s, kv_order order) {
  static std::mutex m;
  static std::map<std::tuple<dtype, int64_t, int, int, int, kv_order>, std::unique_ptr<kv_fixture>> fixtures;
  std::lock_guard<std::mutex> lk(m);
  std::unique_ptr<kv_fixture>& f = fixtures[{s.type, s.n_slots, s.n_kv_head, s.head_dim_k, s.head_dim_v, order}];
  if (!f) f = std::make_unique<kv_fixture>(s, 99, order);
  return *f;
}

}  // namespace

std::vector<float> run_attention(backend& b, const kv_shape& s, const attn_case& a, int64_t n_tok, int64_t first_tok,
                                 std::optional<kv_order> order) {
  kv_fixture& f = shared_kv_fixture(s, order.value_or(b.kv_layout()));
  attention_params p;
  p.n_head = a.n_head;
  p.scale = a.scale;
  p.softcap = a.softcap;
  p.window = a.window;
  // A fixed batch of attn_max_batch queries at increasing positions near the end of the stored
  // range, as in a prefill; callers take a sub-range of it.
  const int64_t total = attn_max_batch;
  const auto q_all = random_floats(size_t(total * a.n_head * s.head_dim_k), 123);
  std::vector<int32_t> pos_all(static_cast<size_t>(total));
  for (int64_t t = 0; t < total; ++t) pos_all[size_t(t)] = int32_t(s.n_slots - total + t);
  std::vector<float> out(size_t(n_tok * a.n_head * s.head_dim_v));
  b.attention(f.view(), q_all.data() + first_tok * a.n_head * s.head_dim_k, pos_all.data() + first_tok, n_tok, p,
              out.data());
  return out;
}

void expect_nan_scores_come_out(backend& b, const std::string& label) {
  const int n_slots = 3000, dk = 16, dv = 8, n_head = 4, n_kv_head = 2;
  auto k = random_floats(size_t(n_slots * n_kv_head * dk), 11);
  auto v = random_floats(size_t(n_slots * n_kv_head * dv), 12);
  std::vector<int32_t> slot_pos(static_cast<size_t>(n_slots));
  for (int s = 0; s < n_slots; ++s) slot_pos[size_t(s)] = s;
  const int32_t pos = 2500;                          // slots past it are not visible
  k[size_t((2900 * n_kv_head + 0) * dk + 3)] = NAN;  // kv head 0, an invisible slot
  kv_layer_view kv{dtype::f32, k.data(), v.data(), slot_pos.data(), n_slots, n_kv_head, dk, dv};
  const attention_params p{n_head, 0.25f, 0.0f, 0};
  auto q = random_floats(size_t(n_head * dk), 13);
  std::vector<float> out(size_t(n_head * dv));
  auto expect_nan_heads = [&](const kv_layer_view& view, auto is_nan_head, const char* what) {
    b.attention(view, q.data(), &pos, 1, p, out.data());
    for (int h = 0; h < n_head; ++h)
      for (int d = 0; d < dv; ++d)
        EXPECT_EQ(std::isnan(out[size_t(h * dv + d)]), is_nan_head(h)) << label << ", " << what << ": head " << h;
  };
  expect_nan_heads(kv, [](int) { return false; }, "a NaN in an invisible key");
  q[size_t(1 * dk + 5)] = NAN;
  expect_nan_heads(kv, [](int h) { return h == 1; }, "a NaN in query head 1");
  q[size_t(1 * dk + 5)] = 0.5f;
  std::vector<float> k_nan = k;
  k_nan[size_t((1234 * n_kv_head + 1) * dk + 7)] = NAN;  // kv head 1 (query heads 2 and 3), visible
  kv_layer_view with_nan = kv;
  with_nan.k = k_nan.data();
  expect_nan_heads(with_nan, [](int h) { return h >= 2; }, "a NaN in a visible key of kv head 1");
}

std::vector<cpu::isa_level> host_mm_levels() {
  std::vector<cpu::isa_level> out;
  const std::pair<cpu::isa_level, std::string> levels[] = {{cpu::isa_level::avx2, "avx2"},
                                                           {cpu::isa_level::avx512vnni, "avx512vnni"},
                                                           {cpu::isa_level::avx512amx, "avx512amx"}};
  for (const auto& [level, name] : levels) {
    // The level runs here when its table took some kernel from it.
    const auto& isas = cpu::kernels_up_to(level).mm_isa_by_id;
    if (std::any_of(std::begin(isas), std::end(isas), [&](const char* isa) { return isa && isa == name; }))
      out.push_back(level);
  }
  return out;
}

std::vector<const cpu::kernel_table*> host_attend_tables() {
  std::vector<const cpu::kernel_table*> out;
  for (auto [level, name] : {std::pair{cpu::isa_level::avx2, "avx2"}, {cpu::isa_level::avx512vnni, "avx512vnni"},
                             {cpu::isa_level::neon, "neon"}}) {
    const cpu::kernel_table& k = cpu::kernels_up_to(level);
    if (std::string(k.attend_isa) == name) out.push_back(&k);  // else the host lacks it
  }
  return out;
}

std::vector<attn_config> attention_configs() {
  std::vector<attn_config> out;
  for (dtype kt : {dtype::f16, dtype::f32}) {
    const char* tn = kt == dtype::f16 ? "f16" : "f32";
    out.push_back({fmt::format("mha_{}", tn), {kt, 37, 3, 8, 8}, {3, 0.35f, 0.0f, 0}});
    out.push_back({fmt::format("gqa_{}", tn), {kt, 61, 2, 64, 64}, {8, 0.125f, 0.0f, 0}});
    out.push_back({fmt::format("mqa_dkv_{}", tn), {kt, 45, 1, 40, 24}, {5, 0.2f, 0.0f, 0}});
    out.push_back({fmt::format("softcap_window_{}", tn), {kt, 150, 2, 32, 32}, {4, 0.5f, 2.0f, 8}});
    out.push_back({fmt::format("long_{}", tn), {kt, 700, 2, 64, 64}, {4, 0.125f, 0.0f, 0}});
    // Groups of 7 query heads (tiles of 4, 2 and 1 rows) on heads whose lengths are not multiples of 8.
    out.push_back({fmt::format("gqa7_odd_dims_{}", tn), {kt, 83, 2, 20, 12}, {14, 0.3f, 0.0f, 0}});
    // Caches longer than a segment (cpu attend_segment_slots = 1024): attended in parts and merged,
    // also under a window that leaves some segments' slots out.
    out.push_back({fmt::format("segments_{}", tn), {kt, 2500, 2, 64, 64}, {4, 0.125f, 0.0f, 0}});
    out.push_back({fmt::format("segments_mqa_window_{}", tn), {kt, 2100, 1, 32, 32}, {2, 0.3f, 0.0f, 1500}});
  }
  return out;
}

namespace {

void add_attention_cases(std::vector<op_case>& cases) {
  for (const attn_config& c : attention_configs()) {
    for (int64_t n_tok : {1, 7}) {
      cases.push_back({fmt::format("attention_{}_tok{}", c.name, n_tok), reordered,
                       [=](backend& b) { return run_attention(b, c.kv, c.attn, n_tok, 0); }});
    }
  }
}

void add_kv_store_cases(std::vector<op_case>& cases) {
  for (dtype kt : {dtype::f16, dtype::f32}) {
    // 13 tokens into a ring of 8 slots: tokens 0-4 and 8-12 share slots; the later must win.
    for (int64_t n_slots : {8, 32}) {
      cases.push_back({fmt::format("kv_store_{}_slots{}", kt == dtype::f16 ? "f16" : "f32", n_slots), exact,
                       [=](backend& b) {
                         const kv_shape s{kt, n_slots, 2, 16, 12};
                         kv_fixture f(s, 7, b.kv_layout());
                         const int64_t n_tok = 13;
                         const auto k = random_floats(size_t(n_tok * 2 * 16), 21);
                         const auto v = random_floats(size_t(n_tok * 2 * 12), 22);
                         std::vector<int32_t> pos(static_cast<size_t>(n_tok));
                         std::iota(pos.begin(), pos.end(), 3);
                         b.kv_store(f.view(), k.data(), v.data(), pos.data(), n_tok);
                         // Everything the op wrote, as floats in slot-major order whatever the
                         // backend's layout: K, V and the slot positions.
                         std::vector<float> out;
                         const kv_layer_view kv = f.view();
                         for (auto [part, dim] : {std::pair{kv_part::k, s.head_dim_k}, std::pair{kv_part::v, s.head_dim_v}})
                           for (int64_t slot = 0; slot < n_slots; ++slot)
                             for (int h = 0; h < s.n_kv_head; ++h) {
                               const size_t at = out.size();
                               out.resize(at + size_t(dim));
                               ref::load_kv_row(kv, part, slot, h, out.data() + at);
                             }
                         for (int32_t p : f.slot_pos) out.push_back(float(p));
                         return out;
                       }});
    }
  }
}

}  // namespace

const std::vector<op_case>& all_op_cases() {
  static const std::vector<op_case> cases = [] {
    std::vector<op_case> c;
    add_matmul_cases(c);
    add_get_rows_cases(c);
    add_matmul_glu_cases(c);
    add_norm_cases(c);
    add_rope_cases(c);
    add_elementwise_cases(c);
    add_attention_cases(c);
    add_kv_store_cases(c);
    return c;
  }();
  return cases;
}

converted convert(const cpu::mm_kernel& mk, const std::vector<float>& x, int64_t n_in, int64_t n_tok) {
  const type_traits& at = type_info(mk.dot_type);
  converted c;
  const size_t stride = row_bytes(at, n_in);
  const int64_t nb = n_in / at.block_elems;
  c.bytes.resize(stride * size_t(n_tok));
  c.d.resize(size_t(nb * n_tok));
  c.sum.resize(size_t(nb * n_tok));
  const int64_t wt = mk.widen ? cpu::wide_tokens(mk, n_tok) : 0;
  if (mk.widen) c.wide.resize(cpu::wide_floats(n_tok, n_in, wt));
  for (int64_t t = 0; t < n_tok; ++t) {
    quant::activation_quantizer(mk.dot_type)(x.data() + t * n_in, c.bytes.data() + size_t(t) * stride, n_in);
    if (mk.needs_block_sums) mk.block_sums(c.bytes.data() + size_t(t) * stride, nb, c.d.data() + t * nb, c.sum.data() + t * nb);
    if (mk.widen)
      mk.widen(c.bytes.data() + size_t(t) * stride, n_in, c.wide.data() + cpu::wide_offset(t, n_in, wt), wt);
  }
  c.rows = cpu::act_rows{c.bytes.data(), stride, c.d.data(), c.sum.data(), nb, mk.widen ? c.wide.data() : nullptr, wt};
  return c;
}

}  // namespace glia::test
